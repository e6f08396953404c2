-- May this session run a retention pass? The pass creates, detaches and
-- drops partitions, which only the owner of hookd's tables (a member of
-- the owning role) may do. NULL owner: the tables are missing (no migrate).
-- parameters: none
-- columns: allowed, owner, role
SELECT coalesce(bool_and(pg_has_role(current_user, c.relowner, 'USAGE')), false) AS allowed,
 coalesce(max(pg_get_userbyid(c.relowner)), '') AS owner, current_user::text AS role
 FROM pg_class c
 WHERE c.oid IN (to_regclass('webhook_inbox'), to_regclass('outbox_events'), to_regclass('outbox_deliveries'),
  to_regclass('attempts'))
