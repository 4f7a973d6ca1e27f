"""The module attributes entry code may read: one allowlist per importable module.

Why an allowlist and not a denylist: a module's globals hold whatever *it* imported (``statistics.sys``,
``fractions.math``, ``re.enum``, ``collections._sys``), and a helper that copies or reaches attributes
by a string (``functools.update_wrapper``, ``operator.attrgetter``, ``collections.namedtuple``) turns any
one of them into an escape. A denylist has to know every such name in every Python version; here an
entry reaches exactly the pure functions, constants and value classes below, whatever the standard
library adds later. ``from M import name`` and ``M.name`` are both checked against the same table.

``functools``, ``collections`` and ``operator`` are not importable at all: every attack on the build
server so far went through them (issue 19), and nothing an entry legitimately computes needs them
(``math.prod``, ``sum``, ``sorted`` and ``itertools`` cover the arithmetic; no imported program or
example entry used them).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


MODULE_ATTRIBUTES: Mapping[str, frozenset[str]] = MappingProxyType(
    {
        # Pure functions and constants only.
        "math": _names(
            "acos acosh asin asinh atan atan2 atanh cbrt ceil comb copysign cos cosh degrees dist e erf erfc "
            "exp exp2 expm1 fabs factorial floor fmod frexp fsum gamma gcd hypot inf isclose isfinite isinf isnan "
            "isqrt lcm ldexp lgamma log log10 log1p log2 modf nan nextafter perm pi pow prod radians remainder "
            "sin sinh sqrt tan tanh tau trunc ulp"
        ),
        "fractions": _names("Fraction"),
        # No getcontext/setcontext/localcontext: the context is per thread, so an entry could change
        # the precision every later request in the same worker computes with.
        "decimal": _names(
            "Decimal DivisionByZero InvalidOperation ROUND_05UP ROUND_CEILING ROUND_DOWN ROUND_FLOOR "
            "ROUND_HALF_DOWN ROUND_HALF_EVEN ROUND_HALF_UP ROUND_UP"
        ),
        "statistics": _names(
            "StatisticsError correlation covariance fmean geometric_mean harmonic_mean linear_regression mean "
            "median median_grouped median_high median_low mode multimode pstdev pvariance quantiles stdev variance"
        ),
        "datetime": _names("MAXYEAR MINYEAR date datetime time timedelta timezone"),
        "itertools": _names(
            "accumulate chain combinations combinations_with_replacement compress count cycle dropwhile "
            "filterfalse groupby islice pairwise permutations product repeat starmap takewhile tee zip_longest"
        ),
        # No Scanner, template/TEMPLATE, purge, RegexFlag, nor the modules re imports (enum, functools, copyreg).
        "re": _names(
            "A ASCII DOTALL I IGNORECASE M MULTILINE NOFLAG S U UNICODE VERBOSE X compile error escape findall "
            "finditer fullmatch match search split sub subn"
        ),
        # No Formatter (it reaches attributes through format fields) and no Template.
        "string": _names(
            "ascii_letters ascii_lowercase ascii_uppercase capwords digits hexdigits octdigits printable "
            "punctuation whitespace"
        ),
    }
)
"""Module -> the attributes an entry may name. The keys are the standard modules entries may import."""


def attribute_allowed(module: str, name: str) -> bool | None:
    """Whether entry code may name ``module.name``; None for a module without a table (an extra import
    a caller allowed explicitly, or the runtime's own primitives module, which has its own list)."""
    table = MODULE_ATTRIBUTES.get(module)
    return None if table is None else name in table
