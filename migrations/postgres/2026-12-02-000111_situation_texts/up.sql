-- A situation's text in another language (issue #20): the situation's own text
-- (situations.text) is the one of a study's default language; each other language of a study
-- needs a row here for every situation of its set, or the study does not open. Same keys as
-- the set (a translation is imported into an existing set).
CREATE TABLE situation_texts (
    situation_id BIGINT NOT NULL REFERENCES situations(id) ON DELETE CASCADE,
    language TEXT NOT NULL,
    text TEXT NOT NULL,
    PRIMARY KEY (situation_id, language)
);
