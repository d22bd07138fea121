"""``python -m ik_solver_demos.servo_demo``: the servo demo by its short name (it lives in tools/)."""
from .tools.servo_demo import main

if __name__ == '__main__':
    main()
