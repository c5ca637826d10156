"""The logged-in site: pages, forms and URLs over the data and the figures (judgement)."""
