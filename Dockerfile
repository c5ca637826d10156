# One image for the web and the workers. Web: the default slim Python base. GPU worker:
# --build-arg BASE_IMAGE=vllm/vllm-openai:<tag>, so vLLM and CUDA come from the official image.
ARG BASE_IMAGE=python:3.11-slim
FROM ${BASE_IMAGE}
WORKDIR /app
ENV PYTHONUNBUFFERED=1 DJANGO_SETTINGS_MODULE=config.settings
# The web image renders report PDFs with headless Chromium, with Korean fonts (Debian's
# packages). GPU workers build with INSTALL_CHROMIUM=0: they never render reports.
ARG INSTALL_CHROMIUM=1
RUN if [ "$INSTALL_CHROMIUM" = "1" ]; then \
      apt-get update && apt-get install -y --no-install-recommends chromium fonts-nanum \
      && rm -rf /var/lib/apt/lists/*; \
    fi
COPY requirements.txt .
RUN python3 -m pip install --no-cache-dir -r requirements.txt
COPY . .
# collectstatic signs nothing, but settings refuse to load with DEBUG off and a weak key.
RUN SECRET_KEY="$(python3 -c 'import secrets; print(secrets.token_hex(32))')" DEBUG=0 \
    python3 manage.py collectstatic --noinput
# The vLLM image's entrypoint starts a server; ours are the commands in docker-compose.yml.
ENTRYPOINT []
CMD ["gunicorn", "config.wsgi", "--bind", "0.0.0.0:8000"]
