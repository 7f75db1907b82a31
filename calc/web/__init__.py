"""The calculator in a browser: `python -m calc web` serves a page on this machine.

Each view is a CLI command's own parser and report function (calc.commands hands them over as
calc.web.query.Route; web never imports commands): the query string is the command's argv
(`/?model=llama2-7b&gpu=a100&tokens=2e12` is `python -m calc llama2-7b --gpu a100 --tokens
2e12`), the report is the one the command builds and calc.views.render draws it, in html for
the page and json/csv for the downloads, so the page cannot disagree with the CLI. The standard
library serves it (calc.web.server); the form and its styles ship in calc/web/static.
"""
