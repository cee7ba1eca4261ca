-- idem PostgreSQL store, schema version 3: a running call's progress message.
--
-- Set by `renew` while the record is in progress (`idem::progress`), cleared when it is
-- settled or taken over. A column without a default is added without rewriting the table:
-- existing records have no message.
ALTER TABLE idem_records ADD COLUMN progress text;
