"""Financial models as workbooks with live formulas: a workbook described as data (`book`),
written to XLSX (`xlsx`), and the models built on it (`dcf`) from filed, sourced figures
(`history`)."""
