#!/usr/bin/env bash
# make-repo.sh DEST — build the "jsworkspace" example repository at DEST.
#
# A JavaScript workspace of two packages: `packages/core`, TypeScript
# compiled by `tsc` into `packages/core/dist` (committed, as a package that
# publishes its build does), and `packages/app`, plain CommonJS that
# requires core's `dist` and is tested with Node's own runner
# (`node --test`). Its main branch carries two merged pull requests (see
# README.md next to this script): a fix in core's source whose test is
# app's (it needs core rebuilt before the tests run: `[env] rebuild`), and
# a feature of app alone.
#
# Deterministic: identities, dates, config and file contents are fixed here
# (dist is written as tsc 4.8 emits it, so making the repository needs no
# tsc), so every machine with git >= 2.28 gets the same commit ids. The
# final main commit id is printed on stdout.
set -euo pipefail

# shellcheck source=../lib/history.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/history.sh"
# Commit dates: 2026-03-09T09:00:00Z (epoch 1773046800), one hour per commit.
history_begin "Wanda Space" wanda@example.com wanda 1773046800 "$@"

# ==============================================================================
# Initial commit: the workspace, core built into dist, app's tests passing.
# ==============================================================================

put package.json <<'EOF'
{
  "name": "jsworkspace",
  "version": "1.0.0",
  "private": true,
  "workspaces": ["packages/*"],
  "scripts": {
    "build": "tsc -p packages/core",
    "test": "node --test"
  }
}
EOF

put README.md <<'EOF'
# jsworkspace

Two packages: `packages/core` (TypeScript, built with `tsc` into
`packages/core/dist`) and `packages/app`, which uses core's build.

```sh
npm run build   # tsc -p packages/core
npm test        # node --test
```
EOF

put packages/core/package.json <<'EOF'
{
  "name": "@jsworkspace/core",
  "version": "1.0.0",
  "main": "dist/index.js",
  "types": "dist/index.d.ts",
  "scripts": {
    "build": "tsc -p ."
  }
}
EOF

put packages/core/tsconfig.json <<'EOF'
{
  "compilerOptions": {
    "target": "ES2019",
    "module": "commonjs",
    "strict": true,
    "declaration": true,
    "rootDir": "src",
    "outDir": "dist"
  },
  "include": ["src"]
}
EOF

put packages/core/src/index.ts <<'EOF'
// slugify("Hello, World!") === "hello-world"
export function slugify(title: string): string {
  return title
    .toLowerCase()
    .replace(/[^a-z0-9]/g, '-');
}

export function words(title: string): string[] {
  return slugify(title).split('-').filter((w) => w.length > 0);
}
EOF

put packages/core/dist/index.js <<'EOF'
"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.words = exports.slugify = void 0;
// slugify("Hello, World!") === "hello-world"
function slugify(title) {
    return title
        .toLowerCase()
        .replace(/[^a-z0-9]/g, '-');
}
exports.slugify = slugify;
function words(title) {
    return slugify(title).split('-').filter((w) => w.length > 0);
}
exports.words = words;
EOF

put packages/core/dist/index.d.ts <<'EOF'
export declare function slugify(title: string): string;
export declare function words(title: string): string[];
EOF

put packages/app/package.json <<'EOF'
{
  "name": "@jsworkspace/app",
  "version": "1.0.0",
  "main": "src/index.js",
  "dependencies": {}
}
EOF

put packages/app/src/index.js <<'EOF'
'use strict';

// core as its build gives it: packages/core/dist (package.json "main").
const { slugify, words } = require('../../core');

function permalink(date, title) {
  return `/${date}/${slugify(title)}`;
}

function wordCount(title) {
  return words(title).length;
}

module.exports = { permalink, wordCount };
EOF

put packages/app/test/permalink.test.js <<'EOF'
'use strict';

const { describe, it } = require('node:test');
const assert = require('node:assert');
const { permalink, wordCount } = require('../src/index');

describe('permalink', () => {
  it('joins the date and the slug', () => {
    assert.strictEqual(permalink('2026-03-09', 'news'), '/2026-03-09/news');
  });

  it('counts words', () => {
    assert.strictEqual(wordCount('Hello, World!'), 2);
  });
});
EOF

commit "jsworkspace: core (TypeScript, built into dist) and app"

# ==============================================================================
# PR #1 — fix in core's source; the test is app's (needs core rebuilt).
# ==============================================================================
branch fix/slug-punctuation

put packages/core/src/index.ts <<'EOF'
// slugify("Hello, World!") === "hello-world"
export function slugify(title: string): string {
  return title
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
}

export function words(title: string): string[] {
  return slugify(title).split('-').filter((w) => w.length > 0);
}
EOF
commit "core: one dash for a run of punctuation, none at the ends"

put packages/app/test/permalink.test.js <<'EOF'
'use strict';

const { describe, it } = require('node:test');
const assert = require('node:assert');
const { permalink, wordCount } = require('../src/index');

describe('permalink', () => {
  it('joins the date and the slug', () => {
    assert.strictEqual(permalink('2026-03-09', 'news'), '/2026-03-09/news');
  });

  it('counts words', () => {
    assert.strictEqual(wordCount('Hello, World!'), 2);
  });

  it('cleans punctuation out of the slug', () => {
    assert.strictEqual(permalink('2026-03-09', 'Hello, World!'), '/2026-03-09/hello-world');
  });
});
EOF
commit "Test a permalink of a title with punctuation"

merge_pr 1 fix/slug-punctuation "Permalinks of titles with punctuation" \
  "Fixes #21. \`slugify('Hello, World!')\` gave \`hello--world-\`; it is \`hello-world\` now. The fix is core's; app's permalinks show it once core is built."

# ==============================================================================
# PR #2 — feature of app alone: excerpt.
# ==============================================================================
branch feature/excerpt

put packages/app/src/excerpt.js <<'EOF'
'use strict';

// excerpt(text, n): the first n words of text, with "…" when cut.
function excerpt(text, n) {
  const all = text.split(/\s+/).filter((w) => w.length > 0);
  const kept = all.slice(0, n).join(' ');
  return all.length > n ? `${kept}…` : kept;
}

module.exports = { excerpt };
EOF
commit "app: excerpt"

put packages/app/test/excerpt.test.js <<'EOF'
'use strict';

const { describe, it } = require('node:test');
const assert = require('node:assert');
const { excerpt } = require('../src/excerpt');

describe('excerpt', () => {
  it('keeps a short text whole', () => {
    assert.strictEqual(excerpt('two words', 5), 'two words');
  });

  it('cuts a long text', () => {
    assert.strictEqual(excerpt('one two three four', 2), 'one two…');
  });
});
EOF
commit "Test excerpt"

merge_pr 2 feature/excerpt "Add an excerpt helper" \
  "Closes #22. The first words of a text, for listings."

history_finish
