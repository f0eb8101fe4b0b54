#!/usr/bin/env bash
# make-repo.sh DEST — build the "gocalc" example repository at DEST.
#
# The repository is a tiny Go module (package gocalc at the root, standard
# library only) whose main branch carries three merged pull requests, each a
# case assay has to handle in a compiled language (see README.md next to this
# script): a fix whose test compiles at the base commit, a feature whose test
# calls the function it adds (so the test patch alone does not build), and a
# fix whose test file declares a helper an agent's test file may declare too.
#
# Deterministic: identities, dates, config and file contents are fixed here, so
# every machine with git >= 2.28 gets the same commit ids. The final main
# commit id is printed on stdout.
set -euo pipefail

# A hermetic git and the verbs below (put, commit, branch, merge_pr). Go source
# is indented with tabs, as gofmt wants; the heredocs keep them.
# shellcheck source=../lib/history.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/history.sh"
# Commit dates: 2026-02-02T09:00:00Z (epoch 1770022800), one hour per commit.
history_begin "Gopher" gopher@example.com gopher 1770022800 "$@"

# append PATH < content — add lines at the end of a file of the work tree.
append() {
  cat >>"$tmp/$1"
}

# ==============================================================================
# Initial commit: package gocalc with passing tests.
# ==============================================================================

put go.mod <<'EOF'
module example.com/gocalc

go 1.19
EOF

put README.md <<'EOF'
# gocalc

Arithmetic and small statistics over float64, in Go, standard library only.

```go
gocalc.Div(7, 2)                          // 3.5, nil
gocalc.Mean([]float64{1, 2, 3})           // 2
gocalc.Clamp(12, 0, 10)                   // 10
```

## Running the tests

```sh
go test ./...
```
EOF

put calc.go <<'EOF'
// Package gocalc is a tiny calculator: arithmetic and statistics over
// float64, standard library only.
package gocalc

import "errors"

// ErrDivideByZero is returned by Div when the divisor is zero.
var ErrDivideByZero = errors.New("gocalc: division by zero")

// Add returns a + b.
func Add(a, b float64) float64 { return a + b }

// Sub returns a - b.
func Sub(a, b float64) float64 { return a - b }

// Mul returns a * b.
func Mul(a, b float64) float64 { return a * b }

// Div returns a / b, or ErrDivideByZero when b is zero.
func Div(a, b float64) (float64, error) {
	if b == 0 {
		return 0, ErrDivideByZero
	}
	return a / b, nil
}
EOF

put stats.go <<'EOF'
package gocalc

// Sum returns the sum of xs.
func Sum(xs []float64) float64 {
	total := 0.0
	for _, x := range xs {
		total += x
	}
	return total
}

// Mean returns the arithmetic mean of xs.
func Mean(xs []float64) float64 {
	return Sum(xs) / float64(len(xs))
}
EOF

put clamp.go <<'EOF'
package gocalc

// Clamp limits x to the closed range [lo, hi].
func Clamp(x, lo, hi float64) float64 {
	switch {
	case x > hi:
		return hi
	case x < lo:
		return hi
	}
	return x
}
EOF

put calc_test.go <<'EOF'
package gocalc

import (
	"errors"
	"testing"
)

func TestAdd(t *testing.T) {
	if got := Add(2, 3); got != 5 {
		t.Fatalf("Add(2, 3) = %v, want 5", got)
	}
}

func TestSub(t *testing.T) {
	if got := Sub(2, 5); got != -3 {
		t.Fatalf("Sub(2, 5) = %v, want -3", got)
	}
}

func TestMul(t *testing.T) {
	if got := Mul(4, 2.5); got != 10 {
		t.Fatalf("Mul(4, 2.5) = %v, want 10", got)
	}
}

func TestDiv(t *testing.T) {
	got, err := Div(7, 2)
	if err != nil || got != 3.5 {
		t.Fatalf("Div(7, 2) = %v, %v; want 3.5, nil", got, err)
	}
	if _, err := Div(1, 0); !errors.Is(err, ErrDivideByZero) {
		t.Fatalf("Div(1, 0) error = %v, want ErrDivideByZero", err)
	}
}
EOF

put stats_test.go <<'EOF'
package gocalc

import "testing"

func TestSum(t *testing.T) {
	if got := Sum([]float64{1, 2, 3.5}); got != 6.5 {
		t.Fatalf("Sum = %v, want 6.5", got)
	}
}

func TestMean(t *testing.T) {
	if got := Mean([]float64{1, 2, 3, 4}); got != 2.5 {
		t.Fatalf("Mean = %v, want 2.5", got)
	}
}
EOF

commit "Initial commit: gocalc, arithmetic and statistics in Go"

# ==============================================================================
# PR #1 — a fix whose test compiles at the base commit (merge commit).
# ==============================================================================
branch fix/mean-empty

put stats.go <<'EOF'
package gocalc

// Sum returns the sum of xs.
func Sum(xs []float64) float64 {
	total := 0.0
	for _, x := range xs {
		total += x
	}
	return total
}

// Mean returns the arithmetic mean of xs, and 0 when xs is empty.
func Mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return Sum(xs) / float64(len(xs))
}
EOF

append stats_test.go <<'EOF'

func TestMeanEmpty(t *testing.T) {
	for _, xs := range [][]float64{nil, {}} {
		if got := Mean(xs); got != 0 {
			t.Fatalf("Mean(%#v) = %v, want 0", xs, got)
		}
	}
}
EOF

commit "Mean: return 0 for an empty slice instead of NaN"

merge_pr 1 fix/mean-empty "Mean of an empty slice is 0, not NaN" \
"Mean(nil) and Mean([]float64{}) divided 0 by 0 and returned NaN, which then spread through every sum it touched. An empty slice now has mean 0, as Sum of an empty slice is 0.

Adds TestMeanEmpty to stats_test.go."

# ==============================================================================
# PR #2 — a new function and a test calling it (merge commit). At the base
# commit the test patch alone does not build: `undefined: Median`.
# ==============================================================================
branch feature/median

put median.go <<'EOF'
package gocalc

import "sort"

// Median returns the middle value of xs (the mean of the two middle values
// when there is an even number of them), and 0 when xs is empty. xs is not
// modified.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	sorted := append([]float64(nil), xs...)
	sort.Float64s(sorted)
	mid := len(sorted) / 2
	if len(sorted)%2 == 0 {
		return (sorted[mid-1] + sorted[mid]) / 2
	}
	return sorted[mid]
}
EOF

put median_test.go <<'EOF'
package gocalc

import "testing"

func TestMedian(t *testing.T) {
	cases := []struct {
		xs   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{7}, 7},
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
	}
	for _, c := range cases {
		if got := Median(c.xs); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", c.xs, got, c.want)
		}
	}
	xs := []float64{3, 1, 2}
	Median(xs)
	if xs[0] != 3 || xs[1] != 1 || xs[2] != 2 {
		t.Errorf("Median reordered its argument: %v", xs)
	}
}
EOF

commit "Add Median"

merge_pr 2 feature/median "Add Median" \
"Adds gocalc.Median(xs []float64) float64: the middle value, the mean of the two middle values for an even count, 0 for an empty slice. It sorts a copy, so the caller's slice keeps its order.

Tested in median_test.go (TestMedian)."

# ==============================================================================
# PR #3 — a fix with a new test file that declares a helper (merge commit).
# ==============================================================================
branch fix/clamp-below

put clamp.go <<'EOF'
package gocalc

// Clamp limits x to the closed range [lo, hi].
func Clamp(x, lo, hi float64) float64 {
	switch {
	case x > hi:
		return hi
	case x < lo:
		return lo
	}
	return x
}
EOF

put clamp_test.go <<'EOF'
package gocalc

import "testing"

// check reports got != want for the call named by what.
func check(t *testing.T, what string, got, want float64) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

func TestClampBelow(t *testing.T) {
	check(t, "Clamp(-5, 0, 10)", Clamp(-5, 0, 10), 0)
	check(t, "Clamp(-1, -0.5, 0.5)", Clamp(-1, -0.5, 0.5), -0.5)
}

func TestClampInside(t *testing.T) {
	check(t, "Clamp(5, 0, 10)", Clamp(5, 0, 10), 5)
	check(t, "Clamp(12, 0, 10)", Clamp(12, 0, 10), 10)
}
EOF

commit "Clamp: values below the range give lo"

merge_pr 3 fix/clamp-below "Clamp returns hi for values below the range" \
"Clamp(-5, 0, 10) returned 10: the x < lo case returned hi, so a value below the range jumped to the top of it. It now returns lo.

Adds clamp_test.go with a small check helper."

# ==============================================================================
history_finish
