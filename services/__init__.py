"""The five ShiftStream services; each `services/<name>/app.py` is wiring only."""
