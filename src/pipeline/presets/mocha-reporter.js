// assay's reporter for mocha: writes the run's results as one jest-shaped
// JSON report, the `jest-json` format assay reads (docs/languages.md), to
// the file named by `--reporter-option output=…`. Each test is listed under
// its file with the titles of the suites around it (`ancestorTitles`, one
// per `describe`), its own title and status; a failing hook is listed as a
// failure of its own (`"before all" hook for "t"`).
'use strict';
const fs = require('fs');

function AssayReporter(runner, options) {
  const output = (options.reporterOptions || options.reporterOption || {}).output;
  const files = new Map();
  const add = (test, status, err) => {
    const path = test.titlePath();
    const file = test.file || '';
    const results = files.get(file) || [];
    results.push({
      ancestorTitles: path.slice(0, -1),
      title: path[path.length - 1],
      status,
      failureMessages: err ? [String(err.message || err)] : [],
    });
    files.set(file, results);
  };
  runner.on('pass', (test) => add(test, 'passed'));
  runner.on('fail', (test, err) => add(test, 'failed', err));
  runner.on('pending', (test) => add(test, 'pending'));
  runner.once('end', () => {
    const testResults = [...files].map(([name, assertionResults]) => ({ name, assertionResults }));
    const text = JSON.stringify({ testResults }) + '\n';
    if (output) fs.writeFileSync(output, text);
    else process.stdout.write(text);
  });
}

module.exports = AssayReporter;
