"""The numpy engine of calc.sweep: the formulas over arrays of configurations.

calc.reports.sweep calls it: axes checked and laid out as rows (`axes`), calc._compiled's formulas
traced into polynomials over arrays (`vectorise`), and the resulting columns (`result`). numpy is
imported here, never on the report path.
"""
