from setuptools import setup

setup(name="slugs", version="0.1", py_modules=["slugs"], install_requires=["text-unidecode"])
