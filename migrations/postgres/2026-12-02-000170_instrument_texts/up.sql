-- An instrument's item texts and scale labels in another language (issue #20): the
-- instrument's own texts (instrument_items.text, instruments.labels) are those of a study's
-- default language; each other language of a study needs a row here for its instrument, or the
-- study does not open. Both are JSON: items [{"number", "text"}] with exactly the instrument's
-- item numbers, labels [{"value", "label"}] with exactly its labelled values (checked on import
-- and again on reading, since the instrument may be re-imported).
CREATE TABLE instrument_texts (
    instrument_id BIGINT NOT NULL REFERENCES instruments(id) ON DELETE CASCADE,
    language TEXT NOT NULL,
    items TEXT NOT NULL,
    labels TEXT NOT NULL,
    PRIMARY KEY (instrument_id, language)
);
