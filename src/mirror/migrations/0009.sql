DROP TABLE daily_series_kept;
