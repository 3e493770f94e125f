"""Rule documentation from rule docstrings: `graphguard explain` and docs/rules.md."""
from __future__ import annotations

import inspect

from .rules import ALL_RULES, Rule

__all__ = ["rule_doc", "messages_doc", "rules_markdown"]


def messages_doc(rule: type[Rule]) -> str:
    """The rule's declared messages as a Markdown list: id, severity, what each reports (the ids
    that `--select` / `--ignore` take and reports carry)."""
    if not rule.messages:
        return ""
    lines = ["## Messages"]
    lines += [f"- `{m.id}` ({m.severity}): {m.summary}" for m in rule.messages]
    return "\n".join(lines) + "\n\n"


def rule_doc(rule: type[Rule]) -> str:
    """The full documentation of one rule, as Markdown: summary, messages, then the docstring."""
    body = inspect.cleandoc(rule.__doc__ or "")
    return (f"# {rule.code} {rule.slug} ({rule.severity})\n\n{rule.summary}\n\n"
            f"{messages_doc(rule)}{body}\n")


def rules_table() -> str:
    """The Markdown table of all rules (README and docs/rules.md)."""
    lines = ["| code | slug | severity | detects |", "|---|---|---|---|"]
    lines += [f"| {r.code} | {r.slug} | {r.severity} | {r.summary} |" for r in sorted(ALL_RULES, key=lambda r: r.code)]
    return "\n".join(lines)


def rules_markdown() -> str:
    """docs/rules.md: the table, then every rule's documentation."""
    lines = ["# Rules", "", "Generated from the rule docstrings (`python -m graphguard.docs > docs/rules.md`).", "",
             rules_table(), ""]
    for r in sorted(ALL_RULES, key=lambda r: r.code):
        lines.append(rule_doc(r).replace("# ", "## ", 1).replace("\n## ", "\n### "))
    return "\n".join(lines)


def update_readme(path: str = "README.md") -> None:
    """Rewrite the rule table between the `<!-- rules -->` markers of the README."""
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    head, rest = text.split("<!-- rules -->\n", 1)
    _, tail = rest.split("<!-- /rules -->", 1)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(f"{head}<!-- rules -->\n{rules_table()}\n<!-- /rules -->{tail}")


if __name__ == "__main__":  # pragma: no cover
    import sys

    if sys.argv[1:] == ["--readme"]:
        update_readme()
    else:
        print(rules_markdown(), end="")
