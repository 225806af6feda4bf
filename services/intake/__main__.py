from services.intake.app import service
from shared.streaming.runner import run

run(service.app)
