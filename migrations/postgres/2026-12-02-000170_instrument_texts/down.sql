DROP TABLE instrument_texts;
