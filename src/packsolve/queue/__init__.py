"""How attempts travel: the task format (protocol), the Celery app, sending (producer) and consuming."""
