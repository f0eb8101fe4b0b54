// assay's reporter for `node --test` (Node >= 18.15): writes the run's
// results as one jest-shaped JSON report, the `jest-json` format assay reads
// (docs/languages.md). Each file's tests are listed with the titles of the
// suites around them (`ancestorTitles`), their own title and status. A suite
// or parent test that failed only because a subtest did is not listed (its
// subtests are); one that failed on its own (a hook, a file that does not
// load) is.
import { writeSync } from 'node:fs';

// A sealed assertion in a test file run in a child of `node --test` writes
// its report to the child's stderr (the child has no descriptor 9):
// handed over here, on the run's channel (docs/security.md, "Sealed
// expectations").
const SEAL = '[assay-seal] ';

// A failed test's words, as jest writes them: the error's name and message
// (an AssertionError's carries expected and actual), then its first frames
// outside node's own (`node:internal/…`).
const FRAMES = 5;
function failureText(error) {
  const e = error?.cause ?? error;
  if (e === undefined || e === null) return '';
  if (typeof e !== 'object') return String(e);
  const name = typeof e.name === 'string' && e.name !== 'Error' ? `${e.name}: ` : '';
  const frames = String(e.stack ?? '')
    .split('\n')
    .filter((line) => /^\s+at /.test(line) && !/[( ]node:/.test(line))
    .slice(0, FRAMES);
  return [name + String(e.message ?? ''), ...frames].join('\n');
}

// A test file whose own process failed (it does not load, it exits, it is
// killed) fails as the file, with only "test failed" for its error: its
// words are the process's exit code or signal and what it wrote to
// stderr (a SyntaxError with the line it points at), node's own frames
// and banner left out, at most this many lines.
const FILE_LINES = 12;
function fileFailureText(error, stderr) {
  const ended = error?.signal ? `killed by ${error.signal}`
    : error?.exitCode != null ? `exited with code ${error.exitCode}` : 'failed';
  const lines = (stderr ?? [])
    .join('')
    .split('\n')
    .filter((line) => line.trim() !== '' && !/[( ]node:/.test(line) && !/^Node\.js v/.test(line))
    .slice(0, FILE_LINES);
  return [`test failed: the test file's process ${ended}`, ...lines].join('\n');
}
const STDERR_CAP = 16384;

export default async function* jestShaped(source) {
  const files = new Map();
  const stacks = new Map();
  const stderrs = new Map();
  for await (const event of source) {
    const d = event.data ?? {};
    const file = d.file ?? '';
    if (event.type === 'test:stderr' && !String(d.message ?? '').includes(SEAL)) {
      const seen = stderrs.get(file) ?? { lines: [], bytes: 0 };
      if (seen.bytes < STDERR_CAP) {
        const message = String(d.message ?? '');
        seen.lines.push(message);
        seen.bytes += message.length;
      }
      stderrs.set(file, seen);
      continue;
    }
    if (event.type === 'test:stderr' && String(d.message ?? '').includes(SEAL)) {
      for (const line of String(d.message).split('\n')) {
        const at = line.indexOf(SEAL);
        if (at >= 0) {
          try { writeSync(Number(process.env.ASSAY_AUDIT_FD || 2), '\n' + line.slice(at) + '\n'); } catch (e) { /* no channel */ }
        }
      }
      continue;
    }
    if (event.type === 'test:start') {
      const stack = stacks.get(file) ?? [];
      stack.length = d.nesting;
      stack.push(d.name);
      stacks.set(file, stack);
      continue;
    }
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    const error = d.details?.error;
    const suite = d.details?.type === 'suite';
    if (event.type === 'test:pass' && suite) continue;
    if (event.type === 'test:fail' && error?.failureType === 'subtestsFailed') continue;
    let status = event.type === 'test:pass' ? 'passed' : 'failed';
    if (d.skip !== undefined) status = 'pending';
    else if (d.todo !== undefined) status = 'todo';
    const results = files.get(file) ?? [];
    results.push({
      ancestorTitles: (stacks.get(file) ?? []).slice(0, d.nesting),
      title: d.name,
      status,
      failureMessages: event.type !== 'test:fail' ? []
        : d.nesting === 0 && d.name === file && error?.failureType === 'testCodeFailure'
          ? [fileFailureText(error, stderrs.get(file)?.lines)]
          : [failureText(error)],
    });
    files.set(file, results);
  }
  const testResults = [...files].map(([name, assertionResults]) => ({ name, assertionResults }));
  yield JSON.stringify({ testResults }) + '\n';
}
