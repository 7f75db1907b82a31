"""The numpy engine of calc.sweep: the formulas over arrays of configurations.

calc.reports.sweep calls it: axes checked and laid out as rows (`axes`), each row's formula
symbols and the rules it must keep (`rows`), calc._compiled's formulas traced into polynomials
over arrays (`vectorise`) and made column by column when read (`columns`, `result`), the whole
assembled by `build`. numpy is imported here, never on the report path.
"""
