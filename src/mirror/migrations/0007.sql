CREATE TABLE daily_series (user_id INTEGER PRIMARY KEY, series BLOB);
    CREATE TABLE daily_series_kept (run_id INTEGER NOT NULL);
    INSERT INTO daily_series_kept SELECT COALESCE(MAX(id), 0) FROM sync_runs;