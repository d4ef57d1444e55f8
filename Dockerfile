# One image for the API and the workers; docker-compose.yml picks the command.
FROM python:3.11-slim
WORKDIR /app
ENV PIP_NO_CACHE_DIR=1 PYTHONUNBUFFERED=1
COPY pyproject.toml README.md ./
COPY requirements ./requirements
COPY backend ./backend
COPY worker ./worker
COPY alembic ./alembic
COPY alembic.ini ./
# torch 2.13.0 CPU build from the PyTorch CPU index; everything else pinned by the constraints file.
RUN pip install --extra-index-url https://download.pytorch.org/whl/cpu -c requirements/constraints.txt -e '.[worker]'
COPY frontend ./frontend
EXPOSE 8000
CMD ["kneeboard", "api"]
