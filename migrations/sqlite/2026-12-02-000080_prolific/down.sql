DROP TABLE prolific_webhook_events;
DROP TABLE prolific_studies;
