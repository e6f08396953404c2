-- Locks one dead letter for a replay and says whether it was replayed already.
-- parameters: $1 = dead letter id (uuid)
-- columns: source, source_id, replayed, replayed_at
SELECT source, source_id::text AS source_id, replayed_at IS NOT NULL AS replayed,
       to_char(replayed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS replayed_at
  FROM dead_letters
 WHERE id = $1::uuid
   FOR UPDATE
