from setuptools import setup

setup(cffi_modules=["csolver/build_generetic.py:ffibuilder"])
