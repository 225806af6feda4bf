"""The roster domain: request/result models, compiled arrays, evaluator, greedy solver."""
