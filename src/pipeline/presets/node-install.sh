# The node preset's install (docs/languages.md, JavaScript), in the
# environment directory with the key files: the dependencies with the
# lockfile's own manager, frozen (the only step with the network). Left out
# with `[env] preset_install = false`.
export npm_config_update_notifier=false
if [ -f package-lock.json ] || [ -f npm-shrinkwrap.json ]; then npm ci --no-audit --no-fund
elif [ -f pnpm-lock.yaml ]; then pnpm install --frozen-lockfile
elif [ -f yarn.lock ]; then yarn install --frozen-lockfile
elif [ -f package.json ] && node -e 'const p = require("./package.json"); process.exit(Object.keys({ ...p.dependencies, ...p.devDependencies }).length ? 0 : 1)'; then
  echo 'assay: package.json has dependencies but no lockfile: npm install (not frozen)'; npm install --no-audit --no-fund
fi
