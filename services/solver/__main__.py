from services.solver.app import service
from shared.runner import run

run(service.app)
