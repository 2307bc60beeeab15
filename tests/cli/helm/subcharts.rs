//! Subcharts, library charts, `.helmignore` and `values.schema.json`.
