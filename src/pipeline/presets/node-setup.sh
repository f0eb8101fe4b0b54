# The node preset's setup after its install (docs/languages.md,
# JavaScript), in the environment directory with the key files: choose the
# runner from package.json (a later setup command may overwrite `runner`
# with jest, vitest, mocha or node).
mkdir -p node_modules
node -e '
const p = (() => { try { return require("./package.json"); } catch { return {}; } })();
const deps = { ...p.dependencies, ...p.devDependencies };
const test = String((p.scripts || {}).test || "");
const pick = ["vitest", "jest", "mocha"].find((r) => deps[r] || test.includes(r)) || "node";
console.log(pick);
' > runner
echo "assay: runner $(cat runner)"
