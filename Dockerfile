# One image for the five services and the BullMQ bridge; the compose file picks one per container.
FROM python:3.11-slim AS build
# gcc builds the C solver through cffi at install time.
RUN apt-get update \
 && apt-get install -y --no-install-recommends gcc libc6-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY pyproject.toml setup.py README.md constraints.txt ./
COPY csolver ./csolver
COPY shared ./shared
COPY services ./services
RUN python -m venv /opt/venv \
 && /opt/venv/bin/pip install --no-cache-dir --upgrade pip \
 && /opt/venv/bin/pip install --no-cache-dir . -c constraints.txt

FROM python:3.11-slim
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1
COPY --from=build /opt/venv /opt/venv
WORKDIR /app
RUN useradd --uid 10001 --no-create-home shiftstream
USER shiftstream
# Override per service: python -m services.<intake|solver|fallback|triage|notifier|bridge>
CMD ["python", "-m", "services.intake"]
