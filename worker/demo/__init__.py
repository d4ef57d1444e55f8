"""The demo: the digits models trained and exported for it (`models`), and the seeder that uploads them into a
project and runs its first jobs (`seed`, `python -m worker.demo.seed`). Tests and benches build their small
models here too; production code does not import it."""
