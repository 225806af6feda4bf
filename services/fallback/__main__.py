from services.fallback.app import service
from shared.runner import run

run(service.app)
