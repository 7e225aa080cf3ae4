//! Loom models for workerpick live in `tests/`; run them with `--cfg loom`.
