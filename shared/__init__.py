"""ShiftStream's shared package: roster model, solvers' Python side, and service wiring."""
