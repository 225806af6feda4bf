"""The roster domain: request/result models, compiled arrays, the hard and soft rules and
their evaluator, the greedy solver, the Curtois benchmark format and a generator.

Imports nothing of ShiftStream but `shared.errors`: the solvers and the services build on it.
"""
