"""The validator must accept realistic entry source and reject each escape route with the right rule and line."""

from __future__ import annotations

import ast
import importlib
import textwrap
import types

import pytest

from edge_runtime.entries.module_allowlist import MODULE_ATTRIBUTES
from edge_runtime.entries.validator import ALLOWED_IMPORTS, find_violations, validate_source
from edge_runtime.errors import UnsafeCodeError

CLEAN = textwrap.dedent(
    '''
    """Remind a customer of what they owe."""
    from __future__ import annotations

    import math
    from edge_runtime.semantic import semantic_function, entry_point, Param, load, do, narrate


    @semantic_function(
        "Total the open invoices of a customer",
        inputs={"customer": "customer name -> 'ACME'"},
        outputs={"total": "amount owed -> 120.5"},
    )
    def total_open(ctx, customer):
        invoices = load(ctx, f"open invoices of {customer}", list)
        amounts = [inv["amount"] for inv in invoices if inv.get("status") != "paid"]
        return {"total": math.fsum(amounts)}


    @semantic_function(
        "Tell the customer what they owe",
        inputs={"customer": "customer name -> 'ACME'"},
        outputs={"message": "reminder text"},
        calls=["total_open"],
    )
    def remind(ctx, customer):
        total = do(ctx, "total the open invoices", {"customer": customer})["total"]
        if total <= 0:
            narrate(ctx, f"{customer} owes nothing.")
            return {"message": "nothing owed"}
        names = ", ".join(word.upper() for word in customer.split())
        narrate(ctx, f"{names} owes {total:.2f} ({round(total / 12, 2)} a month)")
        return {"message": "%s owes %.2f" % (customer, total)}


    ENTRY = entry_point(
        id="remind",
        description="remind a customer of their debt",
        template="How much does {customer} owe?",
        params=[Param("customer", str)],
        root="remind",
    )
    '''
)


def test_clean_sample_passes_and_returns_tree() -> None:
    tree = validate_source(CLEAN, "remind.py")
    assert isinstance(tree, ast.Module)
    assert find_violations(CLEAN, "remind.py") == []


def test_allowlist_contents() -> None:
    assert {"math", "re", "datetime", "edge_runtime", "edge_runtime.semantic"} <= ALLOWED_IMPORTS
    # the helper modules every issue-19 escape went through are not importable at all
    assert not {"os", "functools", "collections", "operator"} & ALLOWED_IMPORTS
    assert set(MODULE_ATTRIBUTES) == ALLOWED_IMPORTS - {"edge_runtime", "edge_runtime.semantic"}


@pytest.mark.parametrize("module", sorted(MODULE_ATTRIBUTES))
def test_every_allowlisted_attribute_is_a_public_non_module_attribute(module: str) -> None:
    imported = importlib.import_module(module)
    for name in MODULE_ATTRIBUTES[module]:
        assert not name.startswith("_") and hasattr(imported, name), f"{module}.{name}"
        assert not isinstance(getattr(imported, name), types.ModuleType), f"{module}.{name} is a module"


@pytest.mark.parametrize(
    "source",
    [
        "from edge_runtime import load, do\n",
        "import math as m\n\n\ndef f(x):\n    return m.ceil(x) + m.pi\n",
        "import datetime\n\n\ndef f():\n    return datetime.datetime(2020, 1, 1) + datetime.timedelta(days=2)\n",
        "from datetime import timedelta\nfrom fractions import Fraction\nX = Fraction(1, 3)\n",
        "import decimal\n\n\ndef f(x):\n    return decimal.Decimal(x).quantize(decimal.Decimal('0.01'), "
        "rounding=decimal.ROUND_HALF_UP)\n",
        "import re\n\n\ndef f(s):\n    return re.findall(r'[0-9]+', s, re.IGNORECASE)\n",
        "def f(p):\n    return p._asdict()\n",
        "def f(xs):\n    try:\n        return max(xs)\n    except ValueError:\n        return None\n",
        "X: int = 3\npass\n",
    ],
)
def test_other_clean_sources(source: str) -> None:
    validate_source(source)


# (source, rule, line) -- hostile snippets; the first violation in source order must match.
HOSTILE = [
    ("import os\n", "import", 1),
    ("from os import system\n", "import", 1),
    ("x = 1\n__import__('os')\n", "dunder", 2),
    ("def f():\n    return eval('1')\n", "forbidden-call", 2),
    ("def f():\n    exec('x=1')\n", "forbidden-call", 2),
    ("def f():\n    return open('/etc/passwd')\n", "forbidden-call", 2),
    ("def f():\n    return ().__class__.__bases__[0].__subclasses__()\n", "dunder", 2),
    ("def f(x):\n    return getattr(x, '__globals__')\n", "forbidden-call", 2),
    ("def f():\n    return globals()['x']\n", "forbidden-call", 2),
    ("def f():\n    return \"{0.__class__}\".format(1)\n", "format-string", 2),
    ("import math\nimport subprocess\n", "import", 2),
    ("from . import x\n", "import", 1),
    ("class X:\n    pass\n", "class", 1),
    ("def f():\n    global y\n    y = 1\n", "global", 2),
    ("def f():\n    x = 1\n    def g():\n        nonlocal x\n", "global", 4),
    ("async def f():\n    pass\n", "async", 1),
    ("f = eval\n", "forbidden-call", 1),
    ("f = lambda: __builtins__\n", "dunder", 1),
    ("with open('f') as h:\n    pass\n", "with", 1),
    ("print('x')\n", "top-level", 1),
    ("for i in range(3):\n    pass\n", "top-level", 1),
    ("if True:\n    X = 1\n", "top-level", 1),
    ("import importlib.util\n", "import", 1),
    ("sys.modules\n", "forbidden-module-name", 1),
    ("def f():\n    return type('X', (), {})\n", "forbidden-call", 2),
    ("import math\n\n@math.ceil\ndef f():\n    return 1\n", "decorator", 3),
    ("def f():\n    yield 1\n", "generator", 2),
    ("x = 1\ndef f(:\n    pass\n", "syntax", 2),
    # escape routes through allowlisted modules and helpers
    ("import fractions\nM = fractions.sys.modules\n", "forbidden-module-name", 2),
    ("import statistics\nS = statistics._sum\n", "private", 2),
    ("from statistics import _sum\n", "private", 1),
    ("import re\nB = re.enum.bltns\n", "forbidden-module-name", 2),
    # functools, collections and operator are not importable at all
    ("import operator\nG = operator.attrgetter('__globals__')\n", "import", 1),
    ("from operator import methodcaller\n", "import", 1),
    ("import collections\nS = collections._sys\n", "import", 1),
    ("import collections.abc\n", "import", 1),
    ("from collections import Counter, defaultdict\n", "import", 1),
    ("import functools\n", "import", 1),
    # the per-module attribute allowlist (edge_runtime/entries/module_allowlist.py)
    ("import statistics\ndef f():\n    return statistics.namedtuple('P', 'a')\n", "module-attribute", 3),
    ("import fractions\ndef f():\n    return fractions.numbers.Rational\n", "module-attribute", 3),
    ("import decimal\ndef f():\n    decimal.getcontext().prec = 2\n", "module-attribute", 3),
    ("from statistics import random\n", "module-attribute", 1),
    ("from string import Template\n", "module-attribute", 1),
    ("from math import *\n", "import", 1),
    ("import math\nM = math\n", "module-value", 2),
    ("import math\ndef f():\n    return [math][0].pi\n", "module-value", 3),
    ("import math\ndef f(math):\n    return math.pi\n", "module-value", 2),
    ("import math\ndef f():\n    for math in range(3):\n        pass\n", "module-value", 3),
    ("import math as m\nimport re as m\n", "module-value", 2),
    ("import datetime\nfrom datetime import datetime\n", "module-value", 2),
    ("from string import Formatter\n", "format-string", 1),
    ("F = '{0.__class__}'.format_map\n", "format-string", 1),
    ("def f():\n    return (x for x in ()).gi_frame.f_back\n", "frame", 2),
    ("import edge_runtime.semantic\n", "import", 1),
    ("from edge_runtime.semantic import Context\n", "import", 1),
    ("from edge_runtime import errors\n", "import", 1),
    ("def f():\n    return object\n", "forbidden-call", 2),
    ("x = 1\n\n\ndef f(xs):\n    return [y async for y in xs]\n", "async", 5),
]


@pytest.mark.parametrize(("source", "rule", "line"), HOSTILE, ids=[s.strip() for s, _, _ in HOSTILE])
def test_hostile_source_rejected(source: str, rule: str, line: int) -> None:
    with pytest.raises(UnsafeCodeError) as info:
        validate_source(source, "evil.py")
    err = info.value
    assert (err.rule, err.line) == (rule, line), str(err)
    assert err.filename == "evil.py"


def test_message_names_file_line_and_rule() -> None:
    with pytest.raises(UnsafeCodeError) as info:
        validate_source("X = 1\nimport os\n", "bundle/entry.py")
    assert str(info.value).startswith("bundle/entry.py:2: [import] ")


def test_find_violations_reports_all_in_source_order() -> None:
    source = "import os\nclass X:\n    pass\ndef f():\n    return eval('1')\nprint(1)\n"
    errors = find_violations(source, "multi.py")
    assert [(e.line, e.rule) for e in errors] == [
        (1, "import"),
        (2, "class"),
        (5, "forbidden-call"),
        (6, "top-level"),
    ]


def test_extra_allowed_imports() -> None:
    source = "import json\n"
    with pytest.raises(UnsafeCodeError):
        validate_source(source)
    validate_source(source, extra_allowed_imports=frozenset({"json"}))


def test_module_level_values_cannot_run_code() -> None:
    source = "from edge_runtime.semantic import Param\nX = sorted([3, 1])\nP = Param(name='a', description='a')\n"
    errors = find_violations(source, "m.py")
    assert [(e.rule, e.line) for e in errors] == [("top-level", 2)]
