"""Tests of db/: the store on both backends, its errors, migrations and redaction."""
