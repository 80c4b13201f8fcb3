DROP INDEX participants_prolific_key;
DROP INDEX participants_resume_key;
