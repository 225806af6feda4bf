from services.triage.app import service
from shared.runner import run

run(service.app)
