#!/usr/bin/env bash
# make-repo.sh DEST — build the "calc" example repository at DEST.
#
# The repository is a tiny pure-Python calculator (package calc/, unittest
# tests in tests/) whose main branch carries eight merged pull requests, each
# one a case assay has to handle (see README.md next to this script).
#
# Deterministic: identities, dates, config and file contents are fixed here, so
# every machine with git >= 2.28 gets the same commit ids. The final main
# commit id is printed on stdout.
set -euo pipefail

# A hermetic git and the verbs below (put, commit, branch, merge_pr).
# shellcheck source=../lib/history.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/history.sh"
# Commit dates: 2026-01-05T10:00:00Z (epoch 1767607200), one hour per commit.
history_begin "Octo Cat" octo@example.com octo 1767607200 "$@"

# ==============================================================================
# Initial commit: the calc package and a passing test suite.
# ==============================================================================

put .gitignore <<'EOF'
__pycache__/
*.pyc
EOF

put requirements.txt <<'EOF'
# calc has no third-party runtime dependencies.
EOF

put README.md <<'EOF'
# calc

A tiny infix calculator written in pure Python (standard library only).

```python
>>> from calc import evaluate
>>> evaluate("2 * (3 + 4)")
14
```

## Running the tests

```sh
python3 -m unittest -v
```
EOF

put calc/__init__.py <<'EOF'
"""calc: a tiny infix calculator."""

from .evaluator import evaluate
from .parser import ParseError, parse, tokenize

__all__ = ["ParseError", "evaluate", "parse", "tokenize"]
__version__ = "0.1.0"
EOF

put calc/ops.py <<'EOF'
"""Arithmetic operations used by the evaluator."""


def add(a, b):
    return a + b


def sub(a, b):
    return a - b


def mul(a, b):
    return a * b


def divide(a, b):
    """Return a / b, keeping exact integer quotients as int (6 / 3 == 2)."""
    return _quotient(a, b)


def power(a, b):
    return a ** b


def _quotient(a, b):
    if isinstance(a, int) and isinstance(b, int):
        q, r = divmod(a, b)
        if r == 0:
            return q
    return a / b
EOF

put calc/parser.py <<'EOF'
"""Turn an expression string into tokens, then into a flat list of items.

tokenize("2*(3+4)") gives ["2", "*", "(", "3", "+", "4", ")"] and parse()
converts the number tokens: [2, "*", "(", 3, "+", 4, ")"].
"""

OPERATORS = ("**", "+", "-", "*", "/")


class ParseError(ValueError):
    """Raised when an expression cannot be parsed."""


def tokenize(text):
    tokens = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == " ":
            i += 1
        elif ch.isdigit() or ch == ".":
            j = i
            while j < len(text) and (text[j].isdigit() or text[j] == "."):
                j += 1
            tokens.append(text[i:j])
            i = j
        elif text.startswith("**", i):
            tokens.append("**")
            i += 2
        elif ch in "+-*/()":
            tokens.append(ch)
            i += 1
        else:
            raise ParseError(f"unexpected character {ch!r} at position {i}")
    return tokens


def parse(text):
    items = []
    for token in tokenize(text):
        if _is_number(token):
            items.append(_number(token))
        else:
            items.append(token)
    return items


def _is_number(token):
    return token[0].isdigit() or token[0] == "."


def _number(token):
    try:
        return float(token) if "." in token else int(token)
    except ValueError:
        raise ParseError(f"invalid number {token!r}") from None
EOF

put calc/evaluator.py <<'EOF'
"""Evaluate infix expressions by precedence climbing over parsed items."""

from . import ops
from .parser import ParseError, parse

# operator -> (precedence, function); a higher precedence binds tighter.
BINARY_OPERATORS = {
    "+": (1, ops.add),
    "-": (1, ops.sub),
    "*": (2, ops.mul),
    "/": (2, ops.divide),
    "**": (3, ops.power),
}


def evaluate(text):
    """Evaluate an expression such as "2 * (3 + 4)" and return the number."""
    items = parse(text)
    if not items:
        raise ParseError("empty expression")
    value, pos = _expression(items, 0, 1)
    if pos != len(items):
        raise ParseError(f"unexpected {items[pos]!r}")
    return value


def _expression(items, pos, min_precedence):
    left, pos = _operand(items, pos)
    while pos < len(items) and items[pos] in BINARY_OPERATORS:
        precedence, apply = BINARY_OPERATORS[items[pos]]
        if precedence < min_precedence:
            break
        right, pos = _expression(items, pos + 1, precedence + 1)
        left = apply(left, right)
    return left, pos


def _operand(items, pos):
    if pos >= len(items):
        raise ParseError("unexpected end of expression")
    item = items[pos]
    if item == "(":
        value, pos = _expression(items, pos + 1, 1)
        if pos < len(items) and items[pos] == ")":
            pos += 1
        return value, pos
    if isinstance(item, str):
        raise ParseError(f"expected a number, got {item!r}")
    return item, pos + 1
EOF

put tests/__init__.py <<'EOF'
"""Unit tests for calc. Run them with: python3 -m unittest -v"""
EOF

put tests/test_ops.py <<'EOF'
import unittest

from calc import ops


class TestOps(unittest.TestCase):
    def test_add(self):
        self.assertEqual(ops.add(2, 3), 5)

    def test_sub(self):
        self.assertEqual(ops.sub(2, 5), -3)

    def test_mul(self):
        self.assertEqual(ops.mul(4, 2.5), 10.0)

    def test_divide_exact_stays_int(self):
        self.assertEqual(ops.divide(6, 3), 2)
        self.assertIsInstance(ops.divide(6, 3), int)

    def test_divide_inexact_gives_float(self):
        self.assertEqual(ops.divide(7, 2), 3.5)

    def test_power(self):
        self.assertEqual(ops.power(2, 10), 1024)


if __name__ == "__main__":
    unittest.main()
EOF

put tests/test_parser.py <<'EOF'
import unittest

from calc.parser import ParseError, parse, tokenize


class TestParser(unittest.TestCase):
    def test_tokenize_simple(self):
        self.assertEqual(tokenize("1 + 2"), ["1", "+", "2"])

    def test_tokenize_power_is_one_token(self):
        self.assertEqual(tokenize("2**3"), ["2", "**", "3"])

    def test_tokenize_rejects_unknown_character(self):
        with self.assertRaises(ParseError):
            tokenize("2 $ 3")

    def test_parse_numbers(self):
        self.assertEqual(parse("12 * 0.5"), [12, "*", 0.5])

    def test_parse_parentheses(self):
        self.assertEqual(parse("(1+2)"), ["(", 1, "+", 2, ")"])

    def test_parse_rejects_bad_number(self):
        with self.assertRaises(ParseError):
            parse("1.2.3")


if __name__ == "__main__":
    unittest.main()
EOF

put tests/test_evaluator.py <<'EOF'
import unittest

from calc import evaluate
from calc.parser import ParseError


class TestEvaluator(unittest.TestCase):
    def test_eval_addition(self):
        self.assertEqual(evaluate("1 + 2"), 3)

    def test_eval_precedence(self):
        self.assertEqual(evaluate("2 + 3 * 4"), 14)

    def test_eval_parentheses(self):
        self.assertEqual(evaluate("(2 + 3) * 4"), 20)

    def test_eval_left_assoc_subtraction(self):
        self.assertEqual(evaluate("10 - 4 - 3"), 3)

    def test_eval_division(self):
        self.assertEqual(evaluate("7 / 2"), 3.5)

    def test_eval_rejects_dangling_operator(self):
        with self.assertRaises(ParseError):
            evaluate("1 +")


if __name__ == "__main__":
    unittest.main()
EOF

commit "Initial commit: calc, a tiny infix calculator"

# ==============================================================================
# PR #1 — clean bug fix (merge commit).
# ==============================================================================
branch feature/divide-by-zero

put calc/ops.py <<'EOF'
"""Arithmetic operations used by the evaluator."""


def add(a, b):
    return a + b


def sub(a, b):
    return a - b


def mul(a, b):
    return a * b


def divide(a, b):
    """Return a / b, keeping exact integer quotients as int (6 / 3 == 2).

    Raises ValueError("division by zero") when b is zero.
    """
    if b == 0:
        raise ValueError("division by zero")
    return _quotient(a, b)


def power(a, b):
    return a ** b


def _quotient(a, b):
    if isinstance(a, int) and isinstance(b, int):
        q, r = divmod(a, b)
        if r == 0:
            return q
    return a / b
EOF

put tests/test_ops.py <<'EOF'
import unittest

from calc import ops


class TestOps(unittest.TestCase):
    def test_add(self):
        self.assertEqual(ops.add(2, 3), 5)

    def test_sub(self):
        self.assertEqual(ops.sub(2, 5), -3)

    def test_mul(self):
        self.assertEqual(ops.mul(4, 2.5), 10.0)

    def test_divide_exact_stays_int(self):
        self.assertEqual(ops.divide(6, 3), 2)
        self.assertIsInstance(ops.divide(6, 3), int)

    def test_divide_inexact_gives_float(self):
        self.assertEqual(ops.divide(7, 2), 3.5)

    def test_divide_by_zero_raises_value_error(self):
        with self.assertRaises(ValueError) as caught:
            ops.divide(1, 0)
        self.assertEqual(str(caught.exception), "division by zero")
        with self.assertRaises(ValueError):
            ops.divide(2.5, 0.0)

    def test_power(self):
        self.assertEqual(ops.power(2, 10), 1024)


if __name__ == "__main__":
    unittest.main()
EOF

commit "Raise ValueError on division by zero"

merge_pr 1 feature/divide-by-zero "Raise ValueError on division by zero" \
"calc.ops.divide(1, 0) let a ZeroDivisionError (\"integer division or modulo by zero\") escape from the internal _quotient helper, and evaluate(\"1 / 0\") with it. Everything else that rejects bad input raises a ValueError (ParseError is one), so callers had to catch two unrelated exception types.

divide() now checks the divisor first and raises ValueError(\"division by zero\"). Adds a regression test in tests/test_ops.py."

# ==============================================================================
# PR #2 — documentation only (merge commit).
# ==============================================================================
branch feature/usage-docs

put docs/usage.md <<'EOF'
# Using calc

## From Python

```python
from calc import evaluate

evaluate("1 + 2 * 3")      # 7
evaluate("(1 + 2) * 3")    # 9
evaluate("7 / 2")          # 3.5
evaluate("6 / 3")          # 2 (exact quotients stay integers)
```

## Syntax

| operator | meaning        | precedence |
|----------|----------------|------------|
| `**`     | power          | highest    |
| `*` `/`  | multiply, divide | middle   |
| `+` `-`  | add, subtract  | lowest     |

Parentheses group as usual. Numbers are integers (`12`) or decimals (`0.5`,
`.5`).

## Errors

Malformed input raises `calc.ParseError`, a subclass of `ValueError`:

```python
from calc import ParseError, evaluate

try:
    evaluate("2 $ 3")
except ParseError as exc:
    print(exc)              # unexpected character '$' at position 2
```
EOF

commit "Add a usage guide"

put README.md <<'EOF'
# calc

A tiny infix calculator written in pure Python (standard library only).

```python
>>> from calc import evaluate
>>> evaluate("2 * (3 + 4)")
14
```

It supports `+ - * / **` and parentheses. See [docs/usage.md](docs/usage.md)
for the syntax and the errors it raises.

## Running the tests

```sh
python3 -m unittest -v
```

No third-party packages are needed.
EOF

commit "README: point to the usage guide"

merge_pr 2 feature/usage-docs "Document the expression syntax" \
"The README only showed one example. This adds docs/usage.md with the supported operators, their precedence, number formats and the ParseError raised on malformed input, and links it from the README.

Docs only, no code change."

# ==============================================================================
# PR #3 — small feature, no tests (merge commit).
# ==============================================================================
branch feature/cli

put calc/__main__.py <<'EOF'
"""Command-line entry point: python3 -m calc "2 * (3 + 4)"."""

import sys

from .evaluator import evaluate


def main(argv=None):
    args = sys.argv[1:] if argv is None else argv
    if not args:
        print('usage: python3 -m calc "EXPRESSION"', file=sys.stderr)
        return 2
    try:
        print(evaluate(" ".join(args)))
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
EOF

commit "Add python3 -m calc"

merge_pr 3 feature/cli "Add a command-line entry point" \
"Lets you use calc from a shell:

    \$ python3 -m calc \"2 * (3 + 4)\"
    14

Arguments are joined with spaces, so quoting is optional. Errors go to stderr with exit status 1; running it without arguments prints a usage line and exits with 2."

# ==============================================================================
# PR #4 — one PR, two unrelated fixes (merge commit).
# ==============================================================================
branch feature/review-fixes

put calc/parser.py <<'EOF'
"""Turn an expression string into tokens, then into a flat list of items.

tokenize("2*(3+4)") gives ["2", "*", "(", "3", "+", "4", ")"] and parse()
converts the number tokens: [2, "*", "(", 3, "+", 4, ")"].
"""

OPERATORS = ("**", "+", "-", "*", "/")


class ParseError(ValueError):
    """Raised when an expression cannot be parsed."""


def tokenize(text):
    tokens = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == " ":
            i += 1
        elif ch.isdigit() or ch == ".":
            j = i
            while j < len(text) and (text[j].isdigit() or text[j] == "."):
                j += 1
            tokens.append(text[i:j])
            i = j
        elif text.startswith("**", i):
            tokens.append("**")
            i += 2
        elif ch in "+-*/()":
            tokens.append(ch)
            i += 1
        else:
            raise ParseError(f"unexpected character {ch!r} at position {i}")
    return tokens


def parse(text):
    """A "-" where a number is expected is that number's sign:
    parse("-3 + 4") gives [-3, "+", 4].
    """
    items = []
    negative = False
    for token in tokenize(text):
        if _is_number(token):
            value = _number(token)
            items.append(-value if negative else value)
            negative = False
        elif token == "-" and not negative and _expects_operand(items):
            negative = True
        elif negative:
            raise ParseError("expected a number after '-'")
        else:
            items.append(token)
    if negative:
        raise ParseError("expected a number after '-'")
    return items


def _expects_operand(items):
    """True at the start, after an operator and after "("."""
    return not items or items[-1] in OPERATORS or items[-1] == "("


def _is_number(token):
    return token[0].isdigit() or token[0] == "."


def _number(token):
    try:
        return float(token) if "." in token else int(token)
    except ValueError:
        raise ParseError(f"invalid number {token!r}") from None
EOF

put tests/test_parser.py <<'EOF'
import unittest

from calc.parser import ParseError, parse, tokenize


class TestParser(unittest.TestCase):
    def test_tokenize_simple(self):
        self.assertEqual(tokenize("1 + 2"), ["1", "+", "2"])

    def test_tokenize_power_is_one_token(self):
        self.assertEqual(tokenize("2**3"), ["2", "**", "3"])

    def test_tokenize_rejects_unknown_character(self):
        with self.assertRaises(ParseError):
            tokenize("2 $ 3")

    def test_parse_numbers(self):
        self.assertEqual(parse("12 * 0.5"), [12, "*", 0.5])

    def test_parse_parentheses(self):
        self.assertEqual(parse("(1+2)"), ["(", 1, "+", 2, ")"])

    def test_parse_rejects_bad_number(self):
        with self.assertRaises(ParseError):
            parse("1.2.3")

    def test_parse_negative_number(self):
        self.assertEqual(parse("-3 + 4"), [-3, "+", 4])
        self.assertEqual(parse("2 * -1.5"), [2, "*", -1.5])
        self.assertEqual(parse("(-2)"), ["(", -2, ")"])
        self.assertEqual(parse("5 - 3"), [5, "-", 3])


if __name__ == "__main__":
    unittest.main()
EOF

commit "Parse a leading minus as the sign of a number"

put calc/evaluator.py <<'EOF'
"""Evaluate infix expressions by precedence climbing over parsed items."""

from . import ops
from .parser import ParseError, parse

# operator -> (precedence, function); a higher precedence binds tighter.
BINARY_OPERATORS = {
    "+": (1, ops.add),
    "-": (1, ops.sub),
    "*": (2, ops.mul),
    "/": (2, ops.divide),
    "**": (3, ops.power),
}

# Operators that group right to left: 2 ** 3 ** 2 == 2 ** (3 ** 2).
RIGHT_ASSOCIATIVE = {"**"}


def evaluate(text):
    """Evaluate an expression such as "2 * (3 + 4)" and return the number."""
    items = parse(text)
    if not items:
        raise ParseError("empty expression")
    value, pos = _expression(items, 0, 1)
    if pos != len(items):
        raise ParseError(f"unexpected {items[pos]!r}")
    return value


def _expression(items, pos, min_precedence):
    left, pos = _operand(items, pos)
    while pos < len(items) and items[pos] in BINARY_OPERATORS:
        operator = items[pos]
        precedence, apply = BINARY_OPERATORS[operator]
        if precedence < min_precedence:
            break
        if operator in RIGHT_ASSOCIATIVE:
            right, pos = _expression(items, pos + 1, precedence)
        else:
            right, pos = _expression(items, pos + 1, precedence + 1)
        left = apply(left, right)
    return left, pos


def _operand(items, pos):
    if pos >= len(items):
        raise ParseError("unexpected end of expression")
    item = items[pos]
    if item == "(":
        value, pos = _expression(items, pos + 1, 1)
        if pos < len(items) and items[pos] == ")":
            pos += 1
        return value, pos
    if isinstance(item, str):
        raise ParseError(f"expected a number, got {item!r}")
    return item, pos + 1
EOF

put tests/test_evaluator.py <<'EOF'
import unittest

from calc import evaluate
from calc.parser import ParseError


class TestEvaluator(unittest.TestCase):
    def test_eval_addition(self):
        self.assertEqual(evaluate("1 + 2"), 3)

    def test_eval_precedence(self):
        self.assertEqual(evaluate("2 + 3 * 4"), 14)

    def test_eval_parentheses(self):
        self.assertEqual(evaluate("(2 + 3) * 4"), 20)

    def test_eval_left_assoc_subtraction(self):
        self.assertEqual(evaluate("10 - 4 - 3"), 3)

    def test_eval_division(self):
        self.assertEqual(evaluate("7 / 2"), 3.5)

    def test_eval_rejects_dangling_operator(self):
        with self.assertRaises(ParseError):
            evaluate("1 +")

    def test_eval_power_right_assoc(self):
        self.assertEqual(evaluate("2 ** 3 ** 2"), 512)
        self.assertEqual(evaluate("(2 ** 3) ** 2"), 64)
        self.assertEqual(evaluate("2 * 3 ** 2"), 18)


if __name__ == "__main__":
    unittest.main()
EOF

commit "Make ** right-associative"

merge_pr 4 feature/review-fixes "Fix negative numbers and ** grouping" \
"Two unrelated fixes that came up while reviewing the 0.1 release:

- parse(\"-3 + 4\") produced [\"-\", 3, \"+\", 4], so any expression starting with a negative number (or with one right after an operator or an opening parenthesis) failed with \"expected a number, got '-'\". A minus where a number is expected is now the sign of that number.
- ** grouped left to right, so 2 ** 3 ** 2 gave 64. It now groups right to left, as in Python and in maths, and gives 512.

Each fix comes with a test."

# ==============================================================================
# PR #5 — feature with one solid and one flaky test (merge commit).
# ==============================================================================
branch feature/history

put calc/history.py <<'EOF'
"""Remember evaluated expressions and their results."""

from .evaluator import evaluate


class History:
    """Evaluates expressions and keeps (expression, result) pairs, oldest first.

    Expressions that fail to evaluate are not recorded.
    """

    def __init__(self):
        self._entries = []

    def evaluate(self, text):
        value = evaluate(text)
        self._entries.append((text, value))
        return value

    def entries(self):
        return list(self._entries)

    def last(self):
        """The most recent result, or None when nothing was evaluated yet."""
        return self._entries[-1][1] if self._entries else None

    def clear(self):
        self._entries.clear()
EOF

commit "Add calc.history.History"

put tests/test_history.py <<'EOF'
import os
import unittest


class TestHistory(unittest.TestCase):
    def test_history_records_results(self):
        from calc.history import History

        history = History()
        self.assertIsNone(history.last())
        self.assertEqual(history.evaluate("1 + 2"), 3)
        self.assertEqual(history.evaluate("2 * 3"), 6)
        with self.assertRaises(ValueError):
            history.evaluate("1 / 0")
        self.assertEqual(history.entries(), [("1 + 2", 3), ("2 * 3", 6)])
        self.assertEqual(history.last(), 6)

    def test_history_flaky_state(self):
        from calc.history import History

        history = History()
        history.evaluate("1 + 1")
        # Flaky on purpose: every other attempt at the same tree fails
        # (assay numbers the attempts in $ASSAY_ATTEMPT: 0, 1, ...).
        count = int(os.environ.get("ASSAY_ATTEMPT", "0")) + 1
        self.assertEqual(count % 2, 0, f"run #{count} of this test (odd runs fail)")


if __name__ == "__main__":
    unittest.main()
EOF

commit "Test History"

merge_pr 5 feature/history "Add calc.history.History" \
"Adds a small History object for REPL-like use: History().evaluate(text) evaluates like calc.evaluate and remembers the (text, result) pair; entries() returns them oldest first, last() the latest result (None before the first one) and clear() forgets everything. Expressions that raise are not recorded.

Tests in tests/test_history.py."

# ==============================================================================
# PR #6 — feature whose new test needs a package that is not installed.
# ==============================================================================
branch feature/plot

put calc/plot.py <<'EOF'
"""Sample an expression over a range of values and chart it with calcplot."""

from .evaluator import evaluate


def sample(expression, values, var="x"):
    """Evaluate expression once per value of var: [(value, result), ...]."""
    points = []
    for value in values:
        text = expression.replace(var, f"({value})")
        points.append((value, evaluate(text)))
    return points


def plot(expression, values, path, var="x"):
    """Write a line chart of the sampled expression to path.

    Needs the optional calcplot package (see requirements.txt).
    """
    import calcplot

    chart = calcplot.LineChart(sample(expression, values, var))
    chart.save(path)
    return path
EOF

put requirements.txt <<'EOF'
# calc itself uses only the standard library.
# calc.plot.plot() draws charts with calcplot:
calcplot>=0.3
EOF

put tests/test_plot.py <<'EOF'
import os
import tempfile
import unittest


class TestPlot(unittest.TestCase):
    def test_plot_sample_points(self):
        from calc.plot import sample

        self.assertEqual(sample("x * x + 1", [-1, 0, 2]), [(-1, 2), (0, 1), (2, 5)])
        self.assertEqual(sample("2 ** n", [0, 3], var="n"), [(0, 1), (3, 8)])

    def test_plot_writes_chart(self):
        import calcplot

        from calc.plot import plot

        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "square.svg")
            plot("x * x", [0, 1, 2], path)
            chart = calcplot.load(path)
        self.assertEqual(chart.points, [(0, 0), (1, 1), (2, 4)])


if __name__ == "__main__":
    unittest.main()
EOF

commit "Add calc.plot with sample() and plot()"

merge_pr 6 feature/plot "Add calc.plot: sample and chart an expression" \
"sample(\"x * x + 1\", [-1, 0, 2]) evaluates the expression once per value and returns [(-1, 2), (0, 1), (2, 5)]; var= picks another variable name. plot(expression, values, path) writes a line chart of those points with calcplot, which becomes an (optional) dependency in requirements.txt.

calcplot is imported only inside plot(), so the rest of calc keeps working without it."

# ==============================================================================
# PR #7 — squash-merged fix: one commit on main, subject ends with (#7).
# ==============================================================================
g checkout -q main

put calc/parser.py <<'EOF'
"""Turn an expression string into tokens, then into a flat list of items.

tokenize("2*(3+4)") gives ["2", "*", "(", "3", "+", "4", ")"] and parse()
converts the number tokens: [2, "*", "(", 3, "+", 4, ")"].
"""

OPERATORS = ("**", "+", "-", "*", "/")


class ParseError(ValueError):
    """Raised when an expression cannot be parsed."""


def tokenize(text):
    tokens = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch.isspace():
            i += 1
        elif ch.isdigit() or ch == ".":
            j = i
            while j < len(text) and (text[j].isdigit() or text[j] == "."):
                j += 1
            tokens.append(text[i:j])
            i = j
        elif text.startswith("**", i):
            tokens.append("**")
            i += 2
        elif ch in "+-*/()":
            tokens.append(ch)
            i += 1
        else:
            raise ParseError(f"unexpected character {ch!r} at position {i}")
    return tokens


def parse(text):
    """A "-" where a number is expected is that number's sign:
    parse("-3 + 4") gives [-3, "+", 4].
    """
    items = []
    negative = False
    for token in tokenize(text):
        if _is_number(token):
            value = _number(token)
            items.append(-value if negative else value)
            negative = False
        elif token == "-" and not negative and _expects_operand(items):
            negative = True
        elif negative:
            raise ParseError("expected a number after '-'")
        else:
            items.append(token)
    if negative:
        raise ParseError("expected a number after '-'")
    return items


def _expects_operand(items):
    """True at the start, after an operator and after "("."""
    return not items or items[-1] in OPERATORS or items[-1] == "("


def _is_number(token):
    return token[0].isdigit() or token[0] == "."


def _number(token):
    try:
        return float(token) if "." in token else int(token)
    except ValueError:
        raise ParseError(f"invalid number {token!r}") from None
EOF

put tests/test_parser.py <<'EOF'
import unittest

from calc.parser import ParseError, parse, tokenize


class TestParser(unittest.TestCase):
    def test_tokenize_simple(self):
        self.assertEqual(tokenize("1 + 2"), ["1", "+", "2"])

    def test_tokenize_power_is_one_token(self):
        self.assertEqual(tokenize("2**3"), ["2", "**", "3"])

    def test_tokenize_rejects_unknown_character(self):
        with self.assertRaises(ParseError):
            tokenize("2 $ 3")

    def test_tokenize_ignores_tabs_and_newlines(self):
        self.assertEqual(tokenize("\t1 +\t2\n"), ["1", "+", "2"])
        self.assertEqual(parse("3 *\r\n4 "), [3, "*", 4])

    def test_parse_numbers(self):
        self.assertEqual(parse("12 * 0.5"), [12, "*", 0.5])

    def test_parse_parentheses(self):
        self.assertEqual(parse("(1+2)"), ["(", 1, "+", 2, ")"])

    def test_parse_rejects_bad_number(self):
        with self.assertRaises(ParseError):
            parse("1.2.3")

    def test_parse_negative_number(self):
        self.assertEqual(parse("-3 + 4"), [-3, "+", 4])
        self.assertEqual(parse("2 * -1.5"), [2, "*", -1.5])
        self.assertEqual(parse("(-2)"), ["(", -2, ")"])
        self.assertEqual(parse("5 - 3"), [5, "-", 3])


if __name__ == "__main__":
    unittest.main()
EOF

commit "Strip whitespace in tokenizer (#7)" \
"* Treat tabs and newlines as whitespace in tokenize()

Expressions pasted from a file or typed across lines contain tabs and
newlines; tokenize() only skipped plain spaces and raised ParseError on them.

* Add a regression test for tabs and newlines"

# ==============================================================================
# PR #8 — clean fix; no statement is written for it (merge commit).
# ==============================================================================
branch feature/unclosed-paren

put calc/evaluator.py <<'EOF'
"""Evaluate infix expressions by precedence climbing over parsed items."""

from . import ops
from .parser import ParseError, parse

# operator -> (precedence, function); a higher precedence binds tighter.
BINARY_OPERATORS = {
    "+": (1, ops.add),
    "-": (1, ops.sub),
    "*": (2, ops.mul),
    "/": (2, ops.divide),
    "**": (3, ops.power),
}

# Operators that group right to left: 2 ** 3 ** 2 == 2 ** (3 ** 2).
RIGHT_ASSOCIATIVE = {"**"}


def evaluate(text):
    """Evaluate an expression such as "2 * (3 + 4)" and return the number."""
    items = parse(text)
    if not items:
        raise ParseError("empty expression")
    value, pos = _expression(items, 0, 1)
    if pos != len(items):
        raise ParseError(f"unexpected {items[pos]!r}")
    return value


def _expression(items, pos, min_precedence):
    left, pos = _operand(items, pos)
    while pos < len(items) and items[pos] in BINARY_OPERATORS:
        operator = items[pos]
        precedence, apply = BINARY_OPERATORS[operator]
        if precedence < min_precedence:
            break
        if operator in RIGHT_ASSOCIATIVE:
            right, pos = _expression(items, pos + 1, precedence)
        else:
            right, pos = _expression(items, pos + 1, precedence + 1)
        left = apply(left, right)
    return left, pos


def _operand(items, pos):
    if pos >= len(items):
        raise ParseError("unexpected end of expression")
    item = items[pos]
    if item == "(":
        value, pos = _expression(items, pos + 1, 1)
        if pos >= len(items) or items[pos] != ")":
            raise ParseError("missing closing parenthesis")
        return value, pos + 1
    if isinstance(item, str):
        raise ParseError(f"expected a number, got {item!r}")
    return item, pos + 1
EOF

put tests/test_evaluator.py <<'EOF'
import unittest

from calc import evaluate
from calc.parser import ParseError


class TestEvaluator(unittest.TestCase):
    def test_eval_addition(self):
        self.assertEqual(evaluate("1 + 2"), 3)

    def test_eval_precedence(self):
        self.assertEqual(evaluate("2 + 3 * 4"), 14)

    def test_eval_parentheses(self):
        self.assertEqual(evaluate("(2 + 3) * 4"), 20)

    def test_eval_left_assoc_subtraction(self):
        self.assertEqual(evaluate("10 - 4 - 3"), 3)

    def test_eval_division(self):
        self.assertEqual(evaluate("7 / 2"), 3.5)

    def test_eval_rejects_dangling_operator(self):
        with self.assertRaises(ParseError):
            evaluate("1 +")

    def test_eval_power_right_assoc(self):
        self.assertEqual(evaluate("2 ** 3 ** 2"), 512)
        self.assertEqual(evaluate("(2 ** 3) ** 2"), 64)
        self.assertEqual(evaluate("2 * 3 ** 2"), 18)

    def test_eval_unclosed_parenthesis(self):
        with self.assertRaises(ParseError):
            evaluate("(1 + 2")
        with self.assertRaises(ParseError):
            evaluate("2 * (3 + (4 - 1)")
        self.assertEqual(evaluate("2 * (3 + (4 - 1))"), 12)


if __name__ == "__main__":
    unittest.main()
EOF

commit "Reject expressions with an unclosed parenthesis"

merge_pr 8 feature/unclosed-paren "Reject unclosed parentheses" \
"evaluate(\"(1 + 2\") returned 3 and evaluate(\"2 * (3 + (4 - 1)\") returned 12: a missing closing parenthesis was silently accepted at the end of the input. Both now raise ParseError(\"missing closing parenthesis\"), like other malformed input.

Includes a test."

# ==============================================================================
history_finish
