"""One report per question calc answers, as data (calc.document.Document).

reports/<X>.py builds report X, calc/views/<X>.py prints it, calc/commands/<X>.py is its CLI verb.
"""
