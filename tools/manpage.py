#!/usr/bin/env python3
"""Writes a man page from a program's own --help (CLI11's layout), so the page never drifts
from the program: NAME and DESCRIPTION from the help's first line, SYNOPSIS from its usage
line, OPTIONS from its option lines, and with --commands a COMMANDS section holding each
command's own help (`PROGRAM help CMD`). The help's closing paragraph becomes EXIT STATUS
when it starts with "Exit status", else NOTES.

    tools/manpage.py PROGRAM SECTION OUT [--commands] [--see-also PAGE...]
"""
import argparse
import re
import subprocess
import sys


def run(argv):
    return subprocess.run(argv, capture_output=True, text=True, check=True).stdout


def roff(text):
    """Text safe in a roff line: backslashes escaped, dashes literal, no leading control dot."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    if text.startswith((".", "'")):
        text = "\\&" + text
    return text


def parse_help(text):
    """CLI11 help -> (summary, usage, {section: [(name, description)]}, closing paragraphs)."""
    lines = text.splitlines()
    summary = lines[0].strip() if lines else ""
    usage = ""
    sections = {}
    closing = []
    current = None
    for line in lines[1:]:
        if line.startswith("Usage: "):
            usage = line[len("Usage: "):].strip()
            current = None
        elif re.match(r"^[A-Z][A-Za-z ]*:$", line):
            current = sections.setdefault(line[:-1], [])
        elif not line.strip():
            current = None
        elif current is not None and line.startswith("  ") and not line.startswith(" " * 29):
            name, _, description = line.strip().partition("  ")
            current.append([name.strip(), description.strip()])
        elif current is not None and line.startswith(" " * 29) and current:
            current[-1][1] = (current[-1][1] + " " + line.strip()).strip()
        else:
            current = None
            closing.append(line.strip())
    return summary, usage, sections, [c for c in closing if c]


def entries(out, items):
    for name, description in items:
        out.append(".TP")
        out.append("\\fB" + roff(name) + "\\fR")
        out.append(roff(description) if description else "")


def page(program, section, commands, see_also):
    help_text = run([program, "--help"])
    version = run([program, "--version"]).strip()
    name = version.split()[0]
    summary, usage, sections, closing = parse_help(help_text)
    description = (summary.split(":", 1)[1] if ":" in summary else summary).strip().rstrip(".")
    out = [f'.TH {roff(name.upper())} {section} "" "{roff(version)}" "backscroll"', ".SH NAME",
           f"{roff(name)} \\- {roff(description)}", ".SH SYNOPSIS", f"\\fB{roff(usage)}\\fR"]
    out += [".SH DESCRIPTION", roff(description[:1].upper() + description[1:]) + ".",
            "The documentation beside this page (docs/, installed under share/doc/backscroll) has "
            "the details and the reasons."]
    if "Options" in sections:
        out.append(".SH OPTIONS")
        entries(out, sections["Options"])
    if commands and "Subcommands" in sections:
        out.append(".SH COMMANDS")
        for command, _ in sections["Subcommands"]:
            csummary, cusage, csections, cclosing = parse_help(run([program, "help", command]))
            out += [f".SS {roff(command)}", roff(csummary), ".PP", f"\\fB{roff(cusage)}\\fR"]
            for title in ("Positionals", "Options"):
                if csections.get(title):
                    entries(out, csections[title])
            if cclosing:
                out += [".PP", roff(" ".join(cclosing))]
    if closing:
        text = " ".join(closing)
        out += [".SH EXIT STATUS" if text.startswith("Exit status") else ".SH NOTES", roff(text)]
    if see_also:
        out += [".SH SEE ALSO", ", ".join(f"\\fB{roff(p.split('(')[0])}\\fR({p.split('(')[1]}"
                                         for p in see_also)]
    return "\n".join(out) + "\n"


def main():
    parser = argparse.ArgumentParser(description="a man page from a program's --help")
    parser.add_argument("program", help="the executable")
    parser.add_argument("section", help="the manual section (1, 8)")
    parser.add_argument("out", help="the file to write")
    parser.add_argument("--commands", action="store_true",
                        help="add a COMMANDS section from `PROGRAM help CMD` for each command")
    parser.add_argument("--see-also", nargs="*", default=[], metavar="PAGE",
                        help="pages to name under SEE ALSO, as name(section)")
    args = parser.parse_args()
    try:
        text = page(args.program, args.section, args.commands, args.see_also)
    except (OSError, subprocess.CalledProcessError) as e:
        sys.exit(f"manpage.py: {args.program}: {e}")
    with open(args.out, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
