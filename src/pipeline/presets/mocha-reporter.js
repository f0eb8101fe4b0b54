// assay's reporter for mocha: writes the run's results as one jest-shaped
// JSON report, the `jest-json` format assay reads (docs/languages.md), to
// the file named by `--reporter-option output=…`. Each test is listed under
// its file with the titles of the suites around it (`ancestorTitles`, one
// per `describe`), its own title and status; a failing hook is listed as a
// failure of its own (`"before all" hook for "t"`) and said on stderr, so
// the run's log keeps its message. A hook of the root suite (a `beforeEach`
// at a file's top level) belongs to no file: its failure is listed under
// the file of the test it stopped, else of the run's first test file, as
// an empty file name would refuse the whole report. A failure carries its
// words (`failureMessages`): the error's message, its expected and actual
// values where the assertion library gives them, and its stack without
// mocha's and node's own frames (assay caps them, docs/verdicts.md).
'use strict';
const fs = require('fs');
const util = require('util');

// Frames of the runner, not of the tests or the code under test.
const RUNNER_FRAME = /\/mocha\/lib\/|\(node:internal\/|^\s*at node:internal\//;

function words(err) {
  if (err === undefined || err === null) return [];
  if (typeof err !== 'object') return [String(err)];
  const message = String(err.message === undefined ? err : err.message);
  const stack = typeof err.stack === 'string' ? err.stack : '';
  const lines = stack.includes(message) ? stack.split('\n') : [message, ...stack.split('\n').slice(1)];
  const kept = lines.filter((l) => !RUNNER_FRAME.test(l));
  const show = (v) => util.inspect(v, { depth: 3, breakLength: 100 }).slice(0, 1000);
  if (err.showDiff !== false && 'expected' in err && 'actual' in err) {
    kept.splice(Math.min(message.split('\n').length, kept.length), 0, `expected: ${show(err.expected)}`, `actual: ${show(err.actual)}`);
  }
  return [kept.join('\n')];
}

function AssayReporter(runner, options) {
  const output = (options.reporterOptions || options.reporterOption || {}).output;
  const files = new Map();
  const firstFile = (suite) =>
    suite.file ||
    suite.tests.map((t) => t.file).find(Boolean) ||
    suite.suites.map(firstFile).find(Boolean);
  const fileOf = (test) => {
    const stopped = test.type === 'hook' && test.ctx && test.ctx.currentTest;
    return test.file || (stopped && stopped.file) || firstFile(runner.suite) || '';
  };
  const add = (test, status, err) => {
    const path = test.titlePath();
    const file = fileOf(test);
    if (err && test.type === 'hook') {
      const why = String(err.stack || err).split('\n').slice(0, 8).join('\n');
      process.stderr.write(`${file}: ${test.fullTitle()} failed: ${why}\n`);
    }
    const results = files.get(file) || [];
    results.push({
      ancestorTitles: path.slice(0, -1),
      title: path[path.length - 1],
      status,
      failureMessages: words(err),
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
