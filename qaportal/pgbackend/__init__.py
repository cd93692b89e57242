"""PostgreSQL as Django's backend has it, with a health check that needs no round trip
(see ``base.DatabaseWrapper``). ``ENGINE = "qaportal.pgbackend"``; ``vendor`` stays
``"postgresql"``."""
