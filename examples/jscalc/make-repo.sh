#!/usr/bin/env bash
# make-repo.sh DEST — build the "jscalc" example repository at DEST.
#
# The repository is a tiny CommonJS package (no dependencies) tested with
# Node's own runner (`node --test`, node:assert), whose main branch carries
# three merged pull requests (see README.md next to this script): a fix, a
# feature whose new test file has a flaky test, and a fix to an existing
# test file.
#
# Deterministic: identities, dates, config and file contents are fixed here,
# so every machine with git >= 2.28 gets the same commit ids. The final main
# commit id is printed on stdout.
set -euo pipefail

# shellcheck source=../lib/history.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/history.sh"
# Commit dates: 2026-03-02T09:00:00Z (epoch 1772442000), one hour per commit.
history_begin "Jay Script" jay@example.com jay 1772442000 "$@"

# ==============================================================================
# Initial commit: the package with passing tests.
# ==============================================================================

put package.json <<'EOF'
{
  "name": "jscalc",
  "version": "1.0.0",
  "private": true,
  "main": "src/calc.js",
  "scripts": {
    "test": "node --test"
  }
}
EOF

put README.md <<'EOF'
# jscalc

Arithmetic and small statistics in plain JavaScript, no dependencies.

```js
const { div } = require('./src/calc');
div(7, 2); // 3.5
```

## Running the tests

```sh
npm test    # node --test
```
EOF

put src/calc.js <<'EOF'
'use strict';

function add(a, b) {
  return a + b;
}

function sub(a, b) {
  return a - b;
}

function mul(a, b) {
  return a * b;
}

function div(a, b) {
  if (b === 0) {
    throw new RangeError('division by zero');
  }
  return a / b;
}

module.exports = { add, sub, mul, div };
EOF

put src/stats.js <<'EOF'
'use strict';

function sum(xs) {
  return xs.reduce((total, x) => total + x, 0);
}

function mean(xs) {
  return sum(xs) / xs.length;
}

module.exports = { sum, mean };
EOF

put src/clamp.js <<'EOF'
'use strict';

// clamp(x, lo, hi): x limited to [lo, hi].
function clamp(x, lo, hi) {
  return Math.min(x, hi);
}

module.exports = { clamp };
EOF

put test/calc.test.js <<'EOF'
'use strict';

const { describe, it } = require('node:test');
const assert = require('node:assert');
const { add, sub, mul, div } = require('../src/calc');

describe('calc', () => {
  it('adds', () => {
    assert.strictEqual(add(2, 3), 5);
  });

  it('subtracts', () => {
    assert.strictEqual(sub(7, 4), 3);
  });

  it('multiplies', () => {
    assert.strictEqual(mul(6, 7), 42);
  });

  describe('div', () => {
    it('divides', () => {
      assert.strictEqual(div(7, 2), 3.5);
    });

    it('refuses zero', () => {
      assert.throws(() => div(1, 0), RangeError);
    });
  });
});
EOF

put test/stats.test.js <<'EOF'
'use strict';

const { describe, it } = require('node:test');
const assert = require('node:assert');
const { sum, mean } = require('../src/stats');

describe('stats', () => {
  it('sums', () => {
    assert.strictEqual(sum([1, 2, 3, 4]), 10);
  });

  it('averages', () => {
    assert.strictEqual(mean([2, 4, 9]), 5);
  });
});
EOF

put test/clamp.test.js <<'EOF'
'use strict';

const { describe, it } = require('node:test');
const assert = require('node:assert');
const { clamp } = require('../src/clamp');

describe('clamp', () => {
  it('keeps values inside', () => {
    assert.strictEqual(clamp(5, 0, 10), 5);
  });

  it('caps above', () => {
    assert.strictEqual(clamp(12, 0, 10), 10);
  });
});
EOF

commit "jscalc: arithmetic, stats and clamp with tests"

# ==============================================================================
# PR #1 — fix: the mean of nothing is NaN.
# ==============================================================================
branch fix/mean-empty

put src/stats.js <<'EOF'
'use strict';

function sum(xs) {
  return xs.reduce((total, x) => total + x, 0);
}

function mean(xs) {
  if (xs.length === 0) {
    return 0;
  }
  return sum(xs) / xs.length;
}

module.exports = { sum, mean };
EOF
commit "stats: the mean of an empty list is 0"

put test/stats.test.js <<'EOF'
'use strict';

const { describe, it } = require('node:test');
const assert = require('node:assert');
const { sum, mean } = require('../src/stats');

describe('stats', () => {
  it('sums', () => {
    assert.strictEqual(sum([1, 2, 3, 4]), 10);
  });

  it('averages', () => {
    assert.strictEqual(mean([2, 4, 9]), 5);
  });

  it('averages nothing to zero', () => {
    assert.strictEqual(mean([]), 0);
  });
});
EOF
commit "Test the mean of an empty list"

merge_pr 1 fix/mean-empty "mean([]) is NaN" \
  "Fixes #11. \`mean([])\` divided 0 by 0; it is 0 now, like \`sum([])\`."

# ==============================================================================
# PR #2 — feature: median, in a new test file with one flaky test.
# ==============================================================================
branch feature/median

put src/stats.js <<'EOF'
'use strict';

function sum(xs) {
  return xs.reduce((total, x) => total + x, 0);
}

function mean(xs) {
  if (xs.length === 0) {
    return 0;
  }
  return sum(xs) / xs.length;
}

function median(xs) {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  if (sorted.length % 2 === 1) {
    return sorted[mid];
  }
  return (sorted[mid - 1] + sorted[mid]) / 2;
}

module.exports = { sum, mean, median };
EOF
commit "stats: median"

put test/median.test.js <<'EOF'
'use strict';

const { describe, it } = require('node:test');
const assert = require('node:assert');
const stats = require('../src/stats');

describe('median', () => {
  it('takes the middle', () => {
    assert.strictEqual(stats.median([3, 1, 2]), 2);
  });

  it('averages the middle pair', () => {
    assert.strictEqual(stats.median([4, 1, 3, 2]), 2.5);
  });

  it('remembers the last call', () => {
    stats.median([1]);
    // Flaky on purpose: every other attempt at the same tree fails (assay
    // numbers the attempts in $ASSAY_ATTEMPT: 0, 1, ...).
    const count = Number(process.env.ASSAY_ATTEMPT || '0') + 1;
    assert.strictEqual(count % 2, 0, `run #${count} of this test (odd runs fail)`);
  });
});
EOF
commit "Test median"

merge_pr 2 feature/median "Add stats.median" \
  "Closes #12. The middle value of a list, or the mean of the middle two."

# ==============================================================================
# PR #3 — fix: clamp ignores its lower bound.
# ==============================================================================
branch fix/clamp-below

put src/clamp.js <<'EOF'
'use strict';

// clamp(x, lo, hi): x limited to [lo, hi].
function clamp(x, lo, hi) {
  return Math.max(lo, Math.min(x, hi));
}

module.exports = { clamp };
EOF
commit "clamp: honour the lower bound"

put test/clamp.test.js <<'EOF'
'use strict';

const { describe, it } = require('node:test');
const assert = require('node:assert');
const { clamp } = require('../src/clamp');

describe('clamp', () => {
  it('keeps values inside', () => {
    assert.strictEqual(clamp(5, 0, 10), 5);
  });

  it('caps above', () => {
    assert.strictEqual(clamp(12, 0, 10), 10);
  });

  it('raises below', () => {
    assert.strictEqual(clamp(-3, 0, 10), 0);
  });
});
EOF
commit "Test clamp below its range"

merge_pr 3 fix/clamp-below "clamp(-3, 0, 10) is -3" \
  "Fixes #13. clamp only capped values above the range."

history_finish
