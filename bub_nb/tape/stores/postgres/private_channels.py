"""Schema version 6: a tape's ``NOTIFY`` channel is known only to roles that may read the tape, and the class
summary shows archived tapes and the notebook a tape's own ``notebook`` event names.

Before, a channel was ``md5`` of the schema, owner and tape name, which anyone could compute and ``LISTEN`` on,
and each notification carried the tape's entry count: a student could watch a classmate write. Now each owner has
a random key (``gen_random_uuid``) in ``channel_keys``, a table no role but the schema's owner reads; a channel is
``md5`` of that key and the tape's name. ``channel(owner, tape)`` hands it out only when ``reads(session_user,
owner)`` holds (the owner, or a teacher of the owner's class) and refuses anyone else, whether the tape exists or
not. A notification carries nothing: a reader wakes and reads what is new through row-level security.
"""

from __future__ import annotations

from bub_nb.tape.events import NOTEBOOK
from bub_nb.tape.stores.postgres.append_path import writing_functions
from bub_nb.tape.stores.postgres.class_reads import summary_function


def private_channel_statements(group: str) -> list[str]:
    """The statements of this step, granting to the (quoted) ``group`` role."""
    return [
        """CREATE TABLE {s}.channel_keys (
            owner name PRIMARY KEY,
            secret text NOT NULL DEFAULT replace(gen_random_uuid()::text, '-', '')
        )""",
        # Nobody but the schema's owner (through the functions below) reads or changes a key.
        "ALTER TABLE {s}.channel_keys ENABLE ROW LEVEL SECURITY",
        "REVOKE ALL ON {s}.channel_keys FROM PUBLIC",
        "DROP FUNCTION {s}.channel(name, text)",
        # The channel of an owner's tape, the owner's key made on first use; only the functions here call it.
        """CREATE FUNCTION {s}.tape_channel(tape_owner name, tape text) RETURNS text
            LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog AS $$
            DECLARE key text;
            BEGIN
                INSERT INTO {s}.channel_keys (owner) VALUES (tape_owner) ON CONFLICT (owner) DO NOTHING;
                SELECT k.secret INTO key FROM {s}.channel_keys k WHERE k.owner = tape_owner;
                RETURN 'bub_' || left(md5(key || '/' || tape), 32);
            END $$""",
        "REVOKE ALL ON FUNCTION {s}.tape_channel(name, text) FROM PUBLIC",
        """CREATE FUNCTION {s}.channel(tape_owner name, tape text) RETURNS text
            LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog AS $$
            BEGIN
                IF NOT {s}.reads(session_user, tape_owner) THEN
                    RAISE EXCEPTION 'Role % may not follow the tapes of %', quote_ident(session_user),
                        quote_ident(tape_owner) USING ERRCODE = '42501';
                END IF;
                RETURN {s}.tape_channel(tape_owner, tape);
            END $$""",
        "REVOKE ALL ON FUNCTION {s}.channel(name, text) FROM PUBLIC",
        f"GRANT EXECUTE ON FUNCTION {{s}}.channel(name, text) TO {group}",
        # The writers notify the private channel, with an empty payload.
        *writing_functions("{s}.tape_channel(session_user, tape_name)", private=True),
        "DROP FUNCTION {s}.class_summary()",
        *summary_function(group, archived=True, notebook_event=NOTEBOOK),
    ]
