"""URL rules whose builders are compiled when first used, not when the rule is added.

Werkzeug compiles two URL builders (generated Python source, `compile`d) for every rule as it
is added, only for `url_for`. Most of the service's ~80 rules are never built into a URL (the
API's, the index's), and compiling them was about four fifths of `create_app`: every spawned
worker and every test's app paid it. A rule of this class compiles each builder on its first
use, once; URL matching is unchanged (it never uses the builders).
"""

from __future__ import annotations

from werkzeug.routing import Rule


class LazyBuildRule(Rule):
    def _compile_builder(self, append_unknown: bool = True):
        compiled = None

        def build(rule: Rule, *args, **kwargs):
            nonlocal compiled  # two threads may both compile it once: the same builder either way
            if compiled is None:
                compiled = Rule._compile_builder(rule, append_unknown).__get__(rule, None)
            return compiled(*args, **kwargs)

        return build
