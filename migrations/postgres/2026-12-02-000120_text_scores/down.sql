DROP TABLE text_scores;
