# assay's test command for the node preset (docs/languages.md, JavaScript):
# runs the runner the setup chose ($ASSAY_ENV/runner) with a reporter that
# writes assay-report.json in jest's shape. node_modules is the
# environment's, read-only (a warm copy of its own when the table declares
# warm = { ASSAY_NODE_MODULES = "node_modules" }).
modules="${ASSAY_NODE_MODULES:-$ASSAY_ENV/node_modules}"
[ -e node_modules ] || [ -L node_modules ] || ln -s "$modules" node_modules
[ -d /usr/share/nodejs ] && export NODE_PATH="${NODE_PATH:+$NODE_PATH:}/usr/share/nodejs"
rm -f assay-report.json
bin() { if [ -x "node_modules/.bin/$1" ]; then echo "node_modules/.bin/$1"; else echo "$1"; fi; }
case "$(cat "$ASSAY_ENV/runner")" in
  vitest) exec "$(bin vitest)" run --reporter=json --outputFile=assay-report.json "$@" ;;
  jest) exec "$(bin jest)" --ci --json --outputFile=assay-report.json "$@" ;;
  mocha) exec "$(bin mocha)" --reporter "$ASSAY_ENV/assay-mocha-reporter.js" --reporter-option output=assay-report.json "$@" ;;
  *) exec node --test --test-reporter="$ASSAY_ENV/assay-node-reporter.mjs" --test-reporter-destination=assay-report.json "$@" ;;
esac
