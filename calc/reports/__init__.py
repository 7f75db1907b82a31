"""One report per question calc answers: reports/<X>.py builds report X as data (a
calc.document.Document), calc/views/<X>.py prints it, calc/commands/<X>.py is its CLI verb."""
