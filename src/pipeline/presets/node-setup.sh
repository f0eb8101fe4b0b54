# The node preset's setup (docs/languages.md, JavaScript), in the
# environment directory with the key files: install the dependencies with
# the lockfile's own manager, frozen (the only step with the network), and
# choose the runner from package.json (a later setup command may overwrite
# `runner` with jest, vitest, mocha or node).
export npm_config_update_notifier=false
if [ -f package-lock.json ] || [ -f npm-shrinkwrap.json ]; then npm ci --no-audit --no-fund
elif [ -f pnpm-lock.yaml ]; then pnpm install --frozen-lockfile
elif [ -f yarn.lock ]; then yarn install --frozen-lockfile
elif [ -f package.json ] && node -e 'const p = require("./package.json"); process.exit(Object.keys({ ...p.dependencies, ...p.devDependencies }).length ? 0 : 1)'; then
  echo 'assay: package.json has dependencies but no lockfile: npm install (not frozen)'; npm install --no-audit --no-fund
fi
mkdir -p node_modules
node -e '
const p = (() => { try { return require("./package.json"); } catch { return {}; } })();
const deps = { ...p.dependencies, ...p.devDependencies };
const test = String((p.scripts || {}).test || "");
const pick = ["vitest", "jest", "mocha"].find((r) => deps[r] || test.includes(r)) || "node";
console.log(pick);
' > runner
echo "assay: runner $(cat runner)"
