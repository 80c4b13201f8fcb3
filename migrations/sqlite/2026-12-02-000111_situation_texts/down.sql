DROP TABLE situation_texts;
