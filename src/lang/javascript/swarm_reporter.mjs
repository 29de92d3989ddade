// swarm's reporter for node's built-in test runner: one JSON line per test
// as it finishes (file, the names from the outermost suite down, outcome,
// message), so a run killed at its time limit keeps what finished. Suites
// are not written: their tests are.
const stacks = new Map();

function pathOf(data) {
  const stack = stacks.get(data.file) ?? [];
  return [...stack.slice(0, data.nesting), data.name];
}

function message(error) {
  if (!error) return null;
  const inner = error.cause ?? error;
  return String(inner?.message ?? inner).slice(0, 4000);
}

function details(error) {
  if (!error) return null;
  const inner = error.cause ?? error;
  return String(inner?.stack ?? inner).slice(0, 8000);
}

export default async function* swarmReporter(source) {
  for await (const event of source) {
    const data = event.data ?? {};
    if (event.type === 'test:start') {
      const stack = stacks.get(data.file) ?? [];
      stack.length = data.nesting;
      stack.push(data.name);
      stacks.set(data.file, stack);
      continue;
    }
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    if (data.details?.type === 'suite') continue;
    const skipped = data.skip !== undefined || data.todo !== undefined;
    const outcome = event.type === 'test:pass' ? (skipped ? 'skipped' : 'passed') : 'failed';
    const error = data.details?.error;
    yield JSON.stringify({
      file: data.file ?? null,
      path: pathOf(data),
      outcome,
      failure: error?.failureType ?? null,
      message: outcome === 'failed' ? message(error) : null,
      details: outcome === 'failed' ? details(error) : null,
    }) + '\n';
  }
}
