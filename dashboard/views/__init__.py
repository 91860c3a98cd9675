"""Dashboard pages, one module per area. Each view parses a form, calls one service or selector and
renders; access, rate limits and error pages come from `dashboard.access`."""
