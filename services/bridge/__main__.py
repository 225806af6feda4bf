from services.bridge.app import service
from shared.streaming.runner import run

run(service.app)
