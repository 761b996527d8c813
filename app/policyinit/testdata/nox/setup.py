from setuptools import setup
setup(name="n", extras_require={"test": ["pytest"]})
